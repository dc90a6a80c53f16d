//go:build !highwater_server_side_balancer

// A franz-go without KIP-848's consumer protocol generally available (before 1.22): the
// harness refuses such a run before it starts (harness/clients/groups.py); this is the line a
// worker asked anyway answers.
package main

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

func consumerProtocol(string) ([]kgo.Opt, error) {
	return nil, fmt.Errorf("franz-go %s has no generally available KIP-848 consumer protocol (ServerSideBalancer, since 1.22)", version())
}
