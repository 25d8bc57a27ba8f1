package main

import (
	"slices"
	"strings"
	"testing"
)

// The examples must match the image: its port, its health command, its name.
// This runs everywhere; container_test.go starts them in a real runtime.
func TestExamplesMatchTheImage(t *testing.T) {
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
	readYAML(t, "docker-compose.yml", &compose)
	mock, ok := compose.Services["dify-mock"]
	if !ok || !strings.HasPrefix(mock.Image, defaultRepository+":") {
		t.Fatalf("compose: no dify-mock service with image %s", defaultRepository)
	}
	// Published on the host's loopback only: the image opts in to remote
	// listening and sets no API key.
	if !slices.Equal(mock.Ports, []string{"127.0.0.1:" + port + ":" + port}) || !slices.Equal(mock.Healthcheck.Test, health) {
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
	readYAML(t, "github-actions.yml", &workflow)
	svc, ok := workflow.Jobs["test"].Services["dify-mock"]
	// No --health-cmd: Docker stores it as CMD-SHELL (/bin/sh -c), which this
	// image cannot run; without one the image's exec-form check applies.
	if !ok || !strings.HasPrefix(svc.Image, defaultRepository+":") || !slices.Equal(svc.Ports, []string{"127.0.0.1:" + port + ":" + port}) ||
		strings.Contains(svc.Options, "--health-cmd") || !strings.Contains(svc.Options, "--health-interval") {
		t.Errorf("workflow service: %+v", svc)
	}
}
