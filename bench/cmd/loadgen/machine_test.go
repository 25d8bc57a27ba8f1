package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseMachineCPU(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  51803 7 26145 148889 501 3 9483 9614 40 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1\n"
	m, ok := parseMachineCPU(stat)
	if !ok {
		t.Fatal("a /proc/stat was not read")
	}
	want := machineCPU{busy: 51803 + 7 + 26145 + 3 + 9483, idle: 148889 + 501, steal: 9614}
	if m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
	// A kernel without the steal field (before 2.6.11).
	if m, ok := parseMachineCPU("cpu 1 2 3 4 5 6 7\n"); !ok || m.steal != 0 || m.busy != 1+2+3+6+7 {
		t.Errorf("seven fields: %+v %v", m, ok)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 x 4 5 6 7 8", "cpu 1 2 3"} {
		if _, ok := parseMachineCPU(bad); ok {
			t.Errorf("%q was read as a /proc/stat", bad)
		}
	}
}

func TestMachineOverSplitsTheMachinesTime(t *testing.T) {
	// 10 s on 2 CPUs = 2,000 ticks: 900 busy, 700 idle, 400 stolen.
	a := machineCPU{busy: 1000, idle: 5000, steal: 100}
	b := machineCPU{busy: 1900, idle: 5700, steal: 500}
	m := machineOver(a, b, 10, 0.5, 0.25)
	if math.Abs(m.StealPercent-20) > 1e-9 {
		t.Errorf("steal %.3f%%, want 20%%", m.StealPercent)
	}
	if math.Abs(m.OtherCores-0.15) > 1e-9 { // 0.9 busy cores less 0.75
		t.Errorf("other work %.3f cores, want 0.15", m.OtherCores)
	}
	// Counters read a moment apart from the processes' may come out below
	// what the processes used: never negative.
	if m := machineOver(a, b, 10, 0.8, 0.3); m.OtherCores != 0 {
		t.Errorf("other work %.3f cores, want 0", m.OtherCores)
	}
	if machineOver(a, a, 10, 0, 0) != nil {
		t.Error("no time passed, yet figures came out")
	}
	if got := m.describe(); got != " stolen=20.0% other=0.15" {
		t.Errorf("describe: %q", got)
	}
	if (*machineFigures)(nil).describe() != "" {
		t.Error("no figures described as some")
	}
}

func TestStealTrackPutsStealInTheStepItHappenedIn(t *testing.T) {
	start := time.Unix(1000, 0)
	step := 100 * time.Millisecond
	s := newStealTrack(start, step)
	s.add(start.Add(2*time.Millisecond), 100)   // the first reading: nothing before it
	s.add(start.Add(101*time.Millisecond), 103) // 3 ticks in step 0
	s.add(start.Add(203*time.Millisecond), 103) // none in step 1
	s.add(start.Add(302*time.Millisecond), 110) // 7 ticks in step 2
	s.add(start.Add(401*time.Millisecond), 109) // a counter going back is no steal
	rows := []timelineRow{{At: 0}, {At: step}, {At: 2 * step}, {At: 3 * step}}
	s.fill(rows)
	want := []time.Duration{30 * time.Millisecond, 0, 70 * time.Millisecond, 0}
	for i, r := range rows {
		if r.Stolen != want[i] {
			t.Errorf("step %d: %v stolen, want %v", i, r.Stolen, want[i])
		}
	}
	(*stealTrack)(nil).fill(rows) // a run without a track leaves the rows alone
}

func TestReportShowsTheMachinesShare(t *testing.T) {
	in := &reportInput{streams: []streamsResult{
		{Streams: 1000, Completed: 1000, ServerCores: 0.5, ClientCores: 0.25,
			Machine: &machineFigures{StealPercent: 12.34, OtherCores: 0.05},
			Phases:  []phase{{Name: phaseLive, Late: summary{Count: 10}, Worst: timelineRow{At: time.Second, Stolen: 40 * time.Millisecond}}}},
		{Streams: 5000, Completed: 5000}, // a result from before the machine figures
	}}
	md := renderReport(in, machine{CPUs: 2}, nil, nil)
	for _, s := range []string{"| Other work cores | CPU stolen % |", "| 0.50 | 0.25 | 0.05 | 12.3 |", "| 0.00 | 0.00 | – | – |",
		"| CPU stolen in it ms |", "| 1000 | all live | 10 |", "| 0 | 40 |"} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
}

// Whatever /proc/stat holds, reading it never panics, and a reading is
// only taken from an aggregate "cpu" line whose sums are the fields' own.
func FuzzParseMachineCPU(f *testing.F) {
	f.Add("cpu  51803 7 26145 148889 501 3 9483 9614 40 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
	f.Add("cpu 1 2 3 4 5 6 7\n")
	f.Add("cpu0 1 2 3 4 5 6 7 8")
	f.Add("cpu 9223372036854775807 1 1 1 1 1 1 1")
	f.Fuzz(func(t *testing.T, stat string) {
		m, ok := parseMachineCPU(stat)
		if !ok {
			if m != (machineCPU{}) {
				t.Fatalf("no reading, yet %+v", m)
			}
			return
		}
		line, _, _ := strings.Cut(stat, "\n")
		fields := strings.Fields(line)
		if len(fields) < 8 || fields[0] != "cpu" {
			t.Fatalf("%q read as an aggregate cpu line", line)
		}
		again, _ := parseMachineCPU(line) // the rest of the file plays no part
		if again != m {
			t.Fatalf("%+v from the file, %+v from its first line", m, again)
		}
	})
}

// The lone-stream target says what the hypervisor took during the run.
func TestOneStreamTargetSaysWhatWasStolen(t *testing.T) {
	in := &reportInput{streams: []streamsResult{{Streams: 1, Completed: 1, Lateness: summary{P99: 3 * time.Millisecond},
		Machine: &machineFigures{StealPercent: 0.5}}}}
	for _, r := range targetRows(in) {
		if strings.HasPrefix(r[0], "Lateness p99 ≤ 2 ms at 1 stream") {
			if r[1] != "3.00 ms, 0.5 % of the CPU stolen" || r[2] != "**missed**" {
				t.Errorf("row %q", r)
			}
			return
		}
	}
	t.Fatal("no 1-stream target row")
}
