package cassettes_test

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// readmeRow is one row of README.md's table of cassettes.
type readmeRow struct {
	name, queries, length string
}

// readmeRows reads the table under "## The cassettes" in README.md.
func readmeRows(t *testing.T) []readmeRow {
	t.Helper()
	f, err := os.Open("README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []readmeRow
	inSection := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") { // a subsection ends the table's section too
			inSection = line == "## The cassettes"
			continue
		}
		if !inSection || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("README row has %d cells, want 4: %s", len(cells), line)
		}
		name := backticked.FindStringSubmatch(cells[0])
		if name == nil {
			t.Fatalf("README row names no cassette in backticks: %s", line)
		}
		rows = append(rows, readmeRow{name[1], strings.TrimSpace(cells[1]), strings.TrimSpace(cells[3])})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

var backticked = regexp.MustCompile("`([^`]+)`")

// TestReadmeListsEveryCassetteAsItPlays: the README's table is how users
// find a cassette (docs/mock/frontend.md links to it), so each row's
// query must pick the cassette and its length must be how long the
// cassette plays at speed 1, turn by turn: the last frame's offset.
func TestReadmeListsEveryCassetteAsItPlays(t *testing.T) {
	set, err := cassette.LoadFS(cassettes.FS(), "built-in cassettes")
	if err != nil {
		t.Fatal(err)
	}
	rows := readmeRows(t)
	var listed []string
	for _, row := range rows {
		listed = append(listed, row.name)
		if row.name == "app" {
			if set.App == nil {
				t.Errorf("README lists the app description, but app.yaml did not load")
			}
			continue
		}
		c, ok := set.Get(row.name)
		if !ok {
			t.Errorf("README lists %q, which is not a built-in cassette", row.name)
			continue
		}
		var queries, recorded, lengths []string
		for _, m := range backticked.FindAllStringSubmatch(row.queries, -1) {
			queries = append(queries, m[1])
		}
		for _, turn := range c.Turns {
			recorded = append(recorded, turn.Request.Query)
			last := turn.Frames[len(turn.Frames)-1].Offset
			lengths = append(lengths, fmt.Sprintf("%.1f s", last.Seconds()))
		}
		if !slices.Equal(queries, recorded) {
			t.Errorf("%s: README gives the queries %q, the cassette's turns are %q", row.name, queries, recorded)
		}
		if want := strings.Join(lengths, " + "); row.length != want {
			t.Errorf("%s: README gives the length %q, the cassette plays %q", row.name, row.length, want)
		}
	}
	for _, name := range set.Names {
		if !slices.Contains(listed, name) {
			t.Errorf("built-in cassette %q is missing from README.md's table", name)
		}
	}
}
