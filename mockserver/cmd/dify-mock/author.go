package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/author"
)

// runAuthor is `dify-mock author`: exit status 0 on success, 1 when a
// scenario cannot be turned into a cassette or written, 2 on bad usage.
func runAuthor(_ context.Context, args []string, stdout, stderr io.Writer) int {
	f := newFlags("author", "dify-mock author [flags] SCENARIO.yaml... (-o OUT | --stdout)",
		"Turns scenario files into cassettes without a live Dify (docs/mock/authoring.md).")
	out := f.fs.String("o", "", "where to write: a file (one scenario) or an existing folder (one NAME.yaml per scenario, NAME from the scenario)")
	force := f.fs.Bool("force", false, "replace existing cassettes (default: refuse to overwrite)")
	toStdout := f.fs.Bool("stdout", false, "print the cassette instead of writing a file (one scenario)")
	source := f.fs.String("source", "", "scenario path to name in the provenance note (default: the path as given)")
	f.footer = `Examples:
  dify-mock author cassettes/scenarios/tool-use.yaml -o cassettes/tool-use.yaml
  dify-mock author --force -o cassettes/ cassettes/scenarios/*.yaml
  dify-mock author my-scenario.yaml --stdout`
	if err := f.parse(args, noEnv, stdout, stderr); err != nil {
		return exitCode(err)
	}
	scenarios := f.args
	usageErr := func(msg string) int { return exitCode(f.usageError(stderr, msg)) }
	switch {
	case len(scenarios) == 0:
		return usageErr("no scenario file given")
	case *toStdout && *out != "":
		return usageErr("-o and --stdout exclude each other")
	case !*toStdout && *out == "":
		return usageErr("say where to write: -o PATH or --stdout")
	case *toStdout && len(scenarios) > 1:
		return usageErr("--stdout takes one scenario")
	case *source != "" && len(scenarios) > 1:
		return usageErr("--source names one scenario")
	}
	outIsDir := false
	if *out != "" {
		if st, err := os.Stat(*out); err == nil && st.IsDir() {
			outIsDir = true
		} else if strings.HasSuffix(*out, "/") || strings.HasSuffix(*out, string(filepath.Separator)) {
			return usageErr(fmt.Sprintf("output folder %s does not exist", *out))
		}
		if !outIsDir && len(scenarios) > 1 {
			return usageErr("several scenarios need -o to name an existing folder")
		}
	}

	status := 0
	for _, path := range scenarios {
		label := *source
		if label == "" {
			label = filepath.ToSlash(filepath.Clean(path))
		}
		name, encoded, err := author.GenerateFile(path, author.Options{Source: label})
		if err != nil {
			fmt.Fprintf(stderr, "dify-mock author: %v\n", err)
			status = 1
			continue
		}
		if *toStdout {
			if _, err := stdout.Write(encoded); err != nil {
				fmt.Fprintf(stderr, "dify-mock author: %v\n", err)
				return 1
			}
			continue
		}
		dir, file := filepath.Dir(*out), filepath.Base(*out)
		if outIsDir {
			dir, file = *out, name+".yaml"
		}
		target, err := author.WriteCassette(dir, strings.TrimSuffix(file, ".yaml"), encoded, *force)
		if errors.Is(err, cassette.ErrExists) {
			fmt.Fprintf(stderr, "dify-mock author: %v; pass --force to replace it\n", err)
			status = 1
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "dify-mock author: %s: %v\n", path, err)
			status = 1
			continue
		}
		fmt.Fprintf(stdout, "wrote %s (synthesized from %s)\n", target, label)
	}
	return status
}
