package author

import (
	"fmt"
	"io"
	"os"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// GenerateFile reads the scenario at path (at most MaxScenarioSize bytes)
// and turns it into a cassette: its name and its encoded YAML.
func GenerateFile(path string, o Options) (name string, encoded []byte, err error) {
	data, err := readScenario(path)
	if err != nil {
		return "", nil, err
	}
	return GenerateBytes(path, data, o)
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

// WriteCassette writes dir/name.yaml and returns its path. Without force it
// never replaces a file (cassette.ErrExists); with force it replaces it
// atomically, so a reader never sees half a cassette.
func WriteCassette(dir, name string, data []byte, force bool) (string, error) {
	if force {
		return cassette.WriteReplace(dir, name, data)
	}
	return cassette.WriteNew(dir, name, data)
}
