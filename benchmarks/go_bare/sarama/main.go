// Sarama (github.com/IBM/sarama) alone, for benchmarks/client_throughput.py's bare rows: the
// settings highwater's Sarama worker gives the library for the benchmark's producer and
// consumer, no worker protocol, no history. client_throughput.py's go_bare builds it once per
// Sarama version in the cache, as the worker is built (a copy of this module, `go mod edit
// -require`, `go mod tidy`, `go build`); its go.mod names the worker's default version. One JSON
// argument, one JSON line out: {"rate": records/s, "cpu": this process's CPU seconds in the timed
// part, "machine": [busy, idle] seconds of the whole machine then (/proc/stat)}; on failure one
// line on stderr and exit status 1.
//
//	produce: {"mode": "produce", "bootstrap": [...], "topic": t, "records": n, "size": b, "partitions": p}
//	  records go to the partitions in turn through the AsyncProducer, values "v<i>:" padded with
//	  '.' to b bytes; timed from the first send until each came back on Successes() or Errors(),
//	  an error if any send failed.
//	consume: {"mode": "consume", "bootstrap": [...], "topic": t, "records": n, "partitions": p}
//	  each partition's log start asked (GetOffset, OffsetOldest) before the clock starts, as the
//	  worker's seek_to_beginning does before the harness's first poll; then, as the worker's first
//	  poll does, a PartitionConsumer per partition started there, each in its own goroutine;
//	  timed until n records with values came out of their Messages() channels.
//
// The settings are the worker's (clients/go/sarama/main.go: common, producerConfig,
// consumerConfig) for what the benchmark asks (client_throughput.py's bench_producer_settings and
// the default ConsumerSettings): protocol level 3.0 (Config.Version), Metadata.Full off; producer
// acks=all (WaitForAll), not idempotent, no compression, the manual partitioner, Retry.Max 3,
// Producer.Timeout 5 s, Flush.Frequency 2 ms (linger), Net.MaxOpenRequests 1 (Sarama has no
// delivery timeout); consumer from the oldest offset, read_uncommitted, MaxWaitTime 500 ms,
// Return.Errors on, auto commit off, metadata refreshed every 5 s. Left out, as highwater's own
// work: the worker's consumer interceptor and log reader (the broker that served each record), the
// channel its poll reads, Sarama's log (sarama.Logger stays Sarama's default, discarding, so stderr
// holds only the error line).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/IBM/sarama"
)

type args struct {
	Mode       string   `json:"mode"`
	Bootstrap  []string `json:"bootstrap"`
	Topic      string   `json:"topic"`
	Records    int      `json:"records"`
	Size       int      `json:"size"`
	Partitions int32    `json:"partitions"`
}

type result struct {
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

// clock is a timed part's start; end gives its result for n records.
type clock struct {
	t0      time.Time
	cpu0    float64
	machine [2]float64
}

func startClock() clock { return clock{time.Now(), processCPU(), machineCPU()} }

func (c clock) end(n int) result {
	seconds := time.Since(c.t0).Seconds()
	m := machineCPU()
	return result{float64(n) / seconds, processCPU() - c.cpu0, [2]float64{m[0] - c.machine[0], m[1] - c.machine[1]}}
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// common is the configuration of both roles (the worker's common).
func common(a args) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.ClientID = "bare-" + a.Topic
	cfg.Metadata.Full = false
	return cfg
}

func produce(a args) (result, error) {
	cfg := common(a)
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = sarama.CompressionNone
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Retry.Max = 3
	cfg.Producer.Timeout = ms(5000)
	cfg.Producer.Flush.Frequency = ms(2)
	cfg.Net.MaxOpenRequests = 1
	if err := cfg.Validate(); err != nil {
		return result{}, err
	}
	// closed on success only: on a failure the process ends at once (main)
	client, err := sarama.NewClient(a.Bootstrap, cfg)
	if err != nil {
		return result{}, err
	}
	ap, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		return result{}, err
	}
	values := make([]string, a.Records)
	for i := range values {
		v := fmt.Sprintf("v%d:", i)
		if len(v) < a.Size {
			v += strings.Repeat(".", a.Size-len(v))
		}
		values[i] = v
	}
	var (
		failed   int
		first    error // the first failed send's
		outcomes sync.WaitGroup
		readers  sync.WaitGroup
	)
	outcomes.Add(a.Records)
	readers.Add(2)
	go func() {
		defer readers.Done()
		for range ap.Successes() {
			outcomes.Done()
		}
	}()
	go func() { // the only writer of failed and first: read after the readers ended
		defer readers.Done()
		for e := range ap.Errors() {
			if failed++; first == nil {
				first = e.Err
			}
			outcomes.Done()
		}
	}()
	c := startClock()
	for i, v := range values {
		ap.Input() <- &sarama.ProducerMessage{Topic: a.Topic, Partition: int32(i) % a.Partitions, Value: sarama.StringEncoder(v)}
	}
	done := make(chan struct{})
	go func() {
		outcomes.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		return result{}, fmt.Errorf("sends still without an outcome 60 s after the last send")
	}
	r := c.end(a.Records)
	ap.AsyncClose()
	readers.Wait()
	if failed > 0 {
		return result{}, fmt.Errorf("%d of %d sends failed, the first: %v", failed, a.Records, first)
	}
	_ = client.Close() // the measurement is taken: a failed close changes nothing
	return r, nil
}

func consume(a args) (result, error) {
	cfg := common(a)
	cfg.Metadata.RefreshFrequency = ms(5000)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.IsolationLevel = sarama.ReadUncommitted
	cfg.Consumer.MaxWaitTime = ms(500)
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	if err := cfg.Validate(); err != nil {
		return result{}, err
	}
	// closed on success only: on a failure the process ends at once (main)
	client, err := sarama.NewClient(a.Bootstrap, cfg)
	if err != nil {
		return result{}, err
	}
	sc, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return result{}, err
	}
	starts := make([]int64, a.Partitions)
	for p := range a.Partitions {
		if starts[p], err = client.GetOffset(a.Topic, p, sarama.OffsetOldest); err != nil {
			return result{}, fmt.Errorf("the log start of %s-%d: %w", a.Topic, p, err)
		}
	}
	var (
		got     atomic.Int64 // records with values, every partition's
		mu      sync.Mutex
		last    error                      // the last partition error, for the timeout's message
		pcs     []sarama.PartitionConsumer // the partition consumers started (mu)
		running sync.WaitGroup             // the partitions' goroutines
		failed  = make(chan error, a.Partitions)
		done    = make(chan struct{})
	)
	c := startClock()
	running.Add(int(a.Partitions))
	for p := range a.Partitions {
		go func() {
			defer running.Done()
			pc, err := sc.ConsumePartition(a.Topic, p, starts[p])
			if err != nil {
				failed <- fmt.Errorf("consuming %s-%d: %w", a.Topic, p, err)
				return
			}
			mu.Lock()
			pcs = append(pcs, pc)
			mu.Unlock()
			go func() {
				for e := range pc.Errors() {
					mu.Lock()
					last = e
					mu.Unlock()
				}
			}()
			for m := range pc.Messages() {
				if m.Value != nil && got.Add(1) == int64(a.Records) {
					close(done)
				}
			}
		}()
	}
	select {
	case <-done:
	case err := <-failed:
		return result{}, err
	case <-time.After(120 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		return result{}, fmt.Errorf("read %d of %d records within 120 s (last partition error: %v)", got.Load(), a.Records, last)
	}
	r := c.end(a.Records)
	// every partition consumer closed before the client (Sarama's order), each goroutine done
	// once its Messages() channel closed
	mu.Lock()
	for _, pc := range pcs {
		pc.AsyncClose()
	}
	mu.Unlock()
	stopped := make(chan struct{})
	go func() {
		running.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
		// the measurement is taken: a failed close changes nothing
		_ = sc.Close()
		_ = client.Close()
	case <-time.After(10 * time.Second): // the process ends anyway
	}
	return r, nil
}

func main() {
	var a args
	err := errors.New("one JSON argument expected")
	if len(os.Args) == 2 {
		err = json.Unmarshal([]byte(os.Args[1]), &a)
	}
	var r result
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
		fmt.Fprintf(os.Stderr, "go_bare sarama: %v\n", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}
