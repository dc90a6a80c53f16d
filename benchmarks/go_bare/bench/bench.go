// Package bench is what the Go libraries' bare programs (benchmarks/go_bare/franz,
// benchmarks/go_bare/sarama: a library alone, for benchmarks/client_throughput.py's bare rows)
// share, none of it the library's: the JSON argument (Args), the JSON line out (Result), the
// clock of the timed part (Clock: wall time, this process's CPU seconds, the whole machine's
// busy and idle seconds from /proc/stat) and the program's main (Main). Each program's module
// requires it through `replace highwater/bench => ../bench`, as the Go workers require
// clients/go/protocol; client_throughput.py's go_bare_binary copies it next to the program it
// builds.
//
// One JSON argument, one JSON line out: {"rate": records/s, "cpu": this process's CPU seconds
// in the timed part, "machine": [busy, idle] seconds of the whole machine then (/proc/stat)}; on
// failure one line on stderr, "go_bare <library>: <error>", and exit status 1.
package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Args is the program's one JSON argument; Mode is "produce" or "consume", Size is a produced
// value's bytes (produce only).
type Args struct {
	Mode       string   `json:"mode"`
	Bootstrap  []string `json:"bootstrap"`
	Topic      string   `json:"topic"`
	Records    int      `json:"records"`
	Size       int      `json:"size"`
	Partitions int32    `json:"partitions"`
}

// Result is the program's one JSON line out: the records a second of the timed part, this
// process's CPU seconds in it and the machine's busy and idle seconds then.
type Result struct {
	Rate    float64    `json:"rate"`
	CPU     float64    `json:"cpu"`
	Machine [2]float64 `json:"machine"`
}

const tickS = 0.01 // /proc/stat counts in USER_HZ, 100 a second on Linux

// machineCPU is the machine's busy and idle CPU seconds so far, every core (/proc/stat's first line).
func machineCPU() [2]float64 {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return [2]float64{}
	}
	line, _, _ := strings.Cut(string(data), "\n")
	var total, idle float64
	for i, f := range strings.Fields(line)[1:] {
		var v float64
		fmt.Sscan(f, &v)
		total += v
		if i == 3 || i == 4 { // idle, iowait
			idle += v
		}
	}
	return [2]float64{(total - idle) * tickS, idle * tickS}
}

// processCPU is this process's CPU seconds so far (user + system).
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// Clock is a timed part's start (StartClock); End gives its result for n records.
type Clock struct {
	t0      time.Time
	cpu0    float64
	machine [2]float64
}

// StartClock starts a timed part.
func StartClock() Clock { return Clock{time.Now(), processCPU(), machineCPU()} }

// End is the result of the timed part started at c, n records in it, ended now.
func (c Clock) End(n int) Result {
	seconds := time.Since(c.t0).Seconds()
	m := machineCPU()
	return Result{float64(n) / seconds, processCPU() - c.cpu0, [2]float64{m[0] - c.machine[0], m[1] - c.machine[1]}}
}

// Main is a bare program's main: it reads the one JSON argument, checks it, runs produce or
// consume as its mode asks and prints the result's JSON line, or on any error one line on
// stderr, "go_bare <library>: <error>", and exits with status 1.
func Main(library string, produce, consume func(Args) (Result, error)) {
	var a Args
	err := errors.New("one JSON argument expected")
	if len(os.Args) == 2 {
		err = json.Unmarshal([]byte(os.Args[1]), &a)
	}
	var r Result
	switch {
	case err != nil:
	case a.Records <= 0 || a.Partitions <= 0 || len(a.Bootstrap) == 0:
		err = fmt.Errorf("records, partitions and bootstrap are required: %s", os.Args[1])
	case a.Mode == "produce":
		r, err = produce(a)
	case a.Mode == "consume":
		r, err = consume(a)
	default:
		err = fmt.Errorf("unknown mode %q", a.Mode)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "go_bare %s: %v\n", library, err)
		os.Exit(1)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}
