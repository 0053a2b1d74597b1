package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// What the benchmark reads of processes, from Linux's /proc: their memory,
// their CPU time, and which child of the local stack is which emulator.

// procBytes reads a size field (VmRSS, VmHWM) of /proc/PID/status.
func procBytes(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the memory of process %d (Linux only): %w", pid, err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status %s %q: %w", pid, field, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// resetPeakRSS starts the process's peak resident size (VmHWM) again from
// its current size, so a phase's peak is its own.
func resetPeakRSS(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting the peak memory of process %d: %w", pid, err)
	}
	return nil
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ), which
// Linux fixes at 100 a second for every architecture it exposes it on.
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU time, user and system, that process pid has used so
// far, its threads' included.
func cpuTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d (Linux only): %w", pid, err)
	}
	// The command's name, in parentheses, may hold spaces: the fields
	// counted are those after its closing parenthesis, the state first.
	i := bytes.LastIndexByte(raw, ')')
	f := strings.Fields(string(raw[i+1:]))
	const utime, stime = 13 - 2, 14 - 2 // fields 14 and 15 of proc(5), 1-based
	if len(f) <= stime {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name, want more than %d", pid, len(f), stime)
	}
	var ticks int64
	for _, k := range []int{utime, stime} {
		n, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat field %d %q: %w", pid, k+2, f[k], err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// childNamed returns the pid of the child of process parent whose command
// line holds name: the local stack's Firestore emulator is its child
// running java with the emulator's jar.
func childNamed(parent int, name string) (int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // it ended meanwhile
		}
		i := bytes.LastIndexByte(raw, ')')
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		dir := filepath.Dir(path)
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(name)) {
			continue
		}
		return strconv.Atoi(filepath.Base(dir))
	}
	return 0, fmt.Errorf("process %d has no child whose command line holds %q", parent, name)
}

// cpuMeter reads the CPU time of the local stack's processes: the
// functions' own (the stack's process: the functions, the event relays,
// the mock's VMs) and each emulator's apart, so that a phase's time can be
// said to be ours or the emulators'.
type cpuMeter struct {
	stack, firestore, pubsub int
}

// cpuUse is the CPU time of each process since a reading.
type cpuUse struct {
	Functions, Firestore, PubSub time.Duration
}

func newCPUMeter(stackPid int) (cpuMeter, error) {
	fs, err := childNamed(stackPid, "cloud-firestore-emulator")
	if err != nil {
		return cpuMeter{}, err
	}
	ps, err := childNamed(stackPid, "pubsub-emulator")
	if err != nil {
		return cpuMeter{}, err
	}
	return cpuMeter{stack: stackPid, firestore: fs, pubsub: ps}, nil
}

// read returns each process's CPU time so far.
func (m cpuMeter) read() (cpuUse, error) {
	var u cpuUse
	for _, p := range []struct {
		pid int
		to  *time.Duration
	}{{m.stack, &u.Functions}, {m.firestore, &u.Firestore}, {m.pubsub, &u.PubSub}} {
		d, err := cpuTime(p.pid)
		if err != nil {
			return cpuUse{}, err
		}
		*p.to = d
	}
	return u, nil
}

func (u cpuUse) minus(v cpuUse) cpuUse {
	return cpuUse{Functions: u.Functions - v.Functions, Firestore: u.Firestore - v.Firestore, PubSub: u.PubSub - v.PubSub}
}

// cpuShare is CPU time per item, in milliseconds, by process.
type cpuShare struct {
	FunctionsMs float64 `json:"functionsMs"`
	FirestoreMs float64 `json:"firestoreEmulatorMs"`
	PubSubMs    float64 `json:"pubsubEmulatorMs"`
}

func (u cpuUse) per(n int) cpuShare {
	ms := func(d time.Duration) float64 { return round(d.Seconds()*1000/float64(n), 1) }
	return cpuShare{FunctionsMs: ms(u.Functions), FirestoreMs: ms(u.Firestore), PubSubMs: ms(u.PubSub)}
}
