//go:build highwater_server_side_balancer

// KIP-848's consumer protocol, on a franz-go that has it generally available (1.22+:
// ServerSideBalancer); harness/clients/franz_go.py builds with this tag from that version.
package main

import "github.com/twmb/franz-go/pkg/kgo"

// consumerProtocol is the group option that runs the consumer protocol, with the balancer
// whose server-side assignor the run asked for (uniform: sticky; range: range).
func consumerProtocol(assignor string) ([]kgo.Opt, error) {
	balancer := kgo.CooperativeStickyBalancer()
	if assignor == "range" {
		balancer = kgo.RangeBalancer()
	}
	return []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(balancer)}, nil
}
