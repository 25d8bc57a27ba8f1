package author_test

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/author"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/lint"
)

const toolFileScenario = `name: chart
query: Draw a chart
steps:
  - tool: painter
    observation: drawn
  - message_file: {path: %s}
  - answer: Here is the chart.
`

// A message_file step with a path carries the file's bytes in the cassette
// as the tool file its URL names, which the mock then serves.
func TestMessageFileAttachesLocalFile(t *testing.T) {
	dir := t.TempDir()
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chart.png"), img.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "chart.yaml")
	name, out, err := author.GenerateBytes(path, []byte(strings.Replace(toolFileScenario, "%s", "chart.png", 1)), author.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if probs := lint.Bytes("generated", out); len(probs) > 0 {
		t.Fatalf("lint: %v", probs)
	}
	f, err := cassette.Decode(path, out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cassette.ParseChat(name, path, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ToolFiles) != 1 {
		t.Fatalf("tool files: %d", len(c.ToolFiles))
	}
	for id, tf := range c.ToolFiles {
		if !bytes.Equal(tf.Data, img.Bytes()) || tf.MimeType != "image/png" || tf.Name != "chart.png" || tf.Extension != "png" {
			t.Errorf("tool file %+v", tf)
		}
		if !strings.Contains(string(c.Turns[0].Frames[len(c.Turns[0].Frames)-1].Raw)+string(out), "/files/tools/"+id+".png?") {
			t.Errorf("no message_file URL names %s", id)
		}
	}

	// Bounded: a file over the limit is refused with its path.
	big := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(big, make([]byte, cassette.MaxToolFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = author.GenerateBytes(path, []byte(strings.Replace(toolFileScenario, "%s", "big.bin", 1)), author.Options{})
	if err == nil || !strings.Contains(err.Error(), "big.bin is over the 4194304-byte limit") {
		t.Errorf("over the limit: %v", err)
	}
	_, _, err = author.GenerateBytes(path, []byte(strings.Replace(toolFileScenario, "%s", "missing.png", 1)), author.Options{})
	if err == nil || !strings.Contains(err.Error(), "missing.png") {
		t.Errorf("missing file: %v", err)
	}
	_, _, err = author.GenerateBytes(path, []byte(strings.Replace(toolFileScenario, "{path: %s}", "{path: chart.png, url: /x}", 1)), author.Options{})
	if err == nil || !strings.Contains(err.Error(), "set url or path, not both") {
		t.Errorf("url and path: %v", err)
	}
}
