package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// durations is a sample of latencies; percentiles use the nearest-rank method.
type durations []time.Duration

// summary is the percentiles the tables print.
type summary struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50"`
	P99   time.Duration `json:"p99"`
	Max   time.Duration `json:"max"`
}

func (d durations) summarize() summary {
	if len(d) == 0 {
		return summary{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return summary{Count: len(s), P50: rank(s, 0.50), P99: rank(s, 0.99), Max: s[len(s)-1]}
}

// rank is the nearest-rank percentile of sorted s (p in (0, 1]).
func rank(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p+0.999999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// procStatus reads the memory and thread figures of a process from
// /proc/<pid>/status (Linux only; zero values elsewhere).
type procStatus struct {
	RSSKiB  int64 // VmRSS: resident now
	HWMKiB  int64 // VmHWM: peak resident since the process started
	Threads int
}

func readProcStatus(pid int) (procStatus, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStatus{}, err
	}
	defer f.Close()
	return parseProcStatus(f)
}

func parseProcStatus(r interface{ Read([]byte) (int, error) }) (procStatus, error) {
	var ps procStatus
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			ps.RSSKiB = n
		case "VmHWM":
			ps.HWMKiB = n
		case "Threads":
			ps.Threads = int(n)
		}
	}
	return ps, sc.Err()
}

// machine describes where the numbers were taken.
type machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	MemoryGiB string `json:"memory_gib"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"go_version"`
}

func describeMachine(cpus int, goVersion string) machine {
	m := machine{CPUs: cpus, GoVersion: goVersion, CPUModel: "unknown", MemoryGiB: "unknown", Kernel: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if k, v, ok := strings.Cut(string(line), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				if f := strings.Fields(line); len(f) >= 2 {
					if kib, err := strconv.ParseFloat(f[1], 64); err == nil {
						m.MemoryGiB = strconv.FormatFloat(kib/(1<<20), 'f', 1, 64)
					}
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}

func writeFileFrom(path string, r io.Reader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat CPU times; 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// processCPU is the user+system CPU time of a process so far (0 when it
// cannot be read).
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/<pid>/stat line; the command name in parentheses may hold spaces.
func parseStatCPU(stat string) time.Duration {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime is field 14.
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+s) * time.Second / clockTicks
}
