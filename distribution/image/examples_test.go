package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The examples must match the image: its port, its health command, its name.
// (No container runtime here to start them; this keeps them from drifting.)
func TestExamplesMatchTheImage(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "dify-mock")
	read := func(name string, v any) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	port := strings.TrimSuffix(exposedPort, "/tcp")
	health := []string{"CMD", binaryPath, "health"}

	var compose struct {
		Services map[string]struct {
			Image       string   `yaml:"image"`
			Ports       []string `yaml:"ports"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
			DependsOn map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	read("docker-compose.yml", &compose)
	mock, ok := compose.Services["dify-mock"]
	if !ok || !strings.HasPrefix(mock.Image, defaultRepository+":") {
		t.Fatalf("compose: no dify-mock service with image %s", defaultRepository)
	}
	if !slices.Contains(mock.Ports, port+":"+port) || !slices.Equal(mock.Healthcheck.Test, health) {
		t.Errorf("compose dify-mock: ports %v, healthcheck %v", mock.Ports, mock.Healthcheck.Test)
	}
	web := compose.Services["web"]
	if web.DependsOn["dify-mock"].Condition != "service_healthy" || web.Environment["DIFY_API_BASE"] != "http://dify-mock:"+port+"/v1" {
		t.Errorf("compose web: depends_on %v, env %v", web.DependsOn, web.Environment)
	}

	var workflow struct {
		Jobs map[string]struct {
			Services map[string]struct {
				Image   string   `yaml:"image"`
				Ports   []string `yaml:"ports"`
				Options string   `yaml:"options"`
			} `yaml:"services"`
		} `yaml:"jobs"`
	}
	read("github-actions.yml", &workflow)
	svc, ok := workflow.Jobs["test"].Services["dify-mock"]
	if !ok || !strings.HasPrefix(svc.Image, defaultRepository+":") || !slices.Contains(svc.Ports, port+":"+port) ||
		!strings.Contains(svc.Options, `--health-cmd "`+binaryPath+` health"`) {
		t.Errorf("workflow service: %+v", svc)
	}
}
