// Command gencassettes regenerates the built-in cassettes from
// cassettes/scenarios/*.yaml: `go generate ./cassettes` runs it in the
// cassettes folder. It does what `dify-mock author --force -o .
// scenarios/*.yaml` does there, without building the whole CLI; it lives
// here because the author package is the mock's own (internal).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/author"
)

func main() {
	paths, err := filepath.Glob(filepath.Join("scenarios", "*.yaml"))
	if err != nil || len(paths) == 0 {
		fmt.Fprintln(os.Stderr, "gen: no scenarios/*.yaml here; run it from the cassettes folder")
		os.Exit(1)
	}
	sort.Strings(paths)
	// Provenance names the scenario relative to the repository root.
	for _, p := range paths {
		label := "cassettes/" + filepath.ToSlash(p)
		name, encoded, err := author.GenerateFile(p, author.Options{Source: label})
		if err == nil {
			p, err = author.WriteCassette(".", name, encoded, true)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "gen: %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("wrote %s (synthesized from %s)\n", p, label)
	}
}
