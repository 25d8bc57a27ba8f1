package author

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Usage is the help text of `dify-mock author`.
const Usage = `Usage: dify-mock author [flags] SCENARIO.yaml... (-o OUT | --stdout)

Turns scenario files into cassettes without a live Dify (docs/mock/authoring.md).

  -o PATH      where to write: a file (one scenario) or an existing folder
               (one NAME.yaml per scenario, NAME from the scenario)
  --force      replace existing cassettes (default: refuse to overwrite)
  --stdout     print the cassette instead of writing a file (one scenario)
  --source S   scenario path to name in the provenance note
               (default: the path as given)

Examples:
  dify-mock author cassettes/scenarios/tool-use.yaml -o cassettes/tool-use.yaml
  dify-mock author --force -o cassettes/ cassettes/scenarios/*.yaml
  dify-mock author my-scenario.yaml --stdout
`

// Main runs `dify-mock author` and returns the exit status: 0 on success,
// 1 when a scenario cannot be turned into a cassette or written, 2 on bad
// usage.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("author", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "")
	force := fs.Bool("force", false, "")
	toStdout := fs.Bool("stdout", false, "")
	source := fs.String("source", "", "")
	var scenarios []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, Usage)
				return 0
			}
			fmt.Fprintf(stderr, "dify-mock author: %v\n\n%s", err, Usage)
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		scenarios = append(scenarios, fs.Arg(0))
		args = fs.Args()[1:]
	}
	usageErr := func(msg string) int {
		fmt.Fprintf(stderr, "dify-mock author: %s\n\n%s", msg, Usage)
		return 2
	}
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
		data, err := readScenario(path)
		if err != nil {
			fmt.Fprintf(stderr, "dify-mock author: %v\n", err)
			status = 1
			continue
		}
		name, encoded, err := GenerateBytes(path, data, Options{Source: label})
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
		target, err := writeCassette(dir, strings.TrimSuffix(file, ".yaml"), encoded, *force)
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

func readScenario(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScenarioSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(data) > MaxScenarioSize {
		return nil, fmt.Errorf("%s: scenario is over the %d-byte limit", path, MaxScenarioSize)
	}
	return data, nil
}

// writeCassette writes dir/name.yaml. Without force it never replaces a
// file; with force it replaces it atomically, so a reader never sees half a
// cassette.
func writeCassette(dir, name string, data []byte, force bool) (string, error) {
	if force {
		return cassette.WriteReplace(dir, name, data)
	}
	return cassette.WriteNew(dir, name, data)
}
