package freshstack

import "testing"

func TestRunWaitsAndRaisesPanics(t *testing.T) {
	ran := false
	Run(func() { ran = true })
	if !ran {
		t.Fatal("Run returned before fn ran")
	}
	defer func() {
		if p := recover(); p != "boom" {
			t.Fatalf("recovered %v, want the panic of fn", p)
		}
	}()
	Run(func() { panic("boom") })
	t.Fatal("a panic in fn was swallowed")
}
