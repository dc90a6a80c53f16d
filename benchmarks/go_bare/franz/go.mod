module highwater/franz-bare

go 1.26.0

// the franz-go worker's default version (clients/go/franz/go.mod); client_throughput.py's go_bare
// builds a copy against the version measured
require (
	github.com/twmb/franz-go v1.22.3
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
	highwater/bench v0.0.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
)

// what the bare programs share (the argument, the line out, the clock, main)
replace highwater/bench => ../bench
