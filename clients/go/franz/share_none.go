//go:build !highwater_share

// A franz-go before 1.21.0 has no share consumer (harness/clients/franz_go.py builds
// share_kip932.go from that version on); the harness refuses share groups on it before a run
// (share.share_client_refusal), and this is the worker's own line if asked anyway.
package main

import (
	"fmt"

	"highwater/protocol"
)

func newShareConsumer(settings, *protocol.Out) (protocol.Role, error) {
	return nil, fmt.Errorf("franz-go %s has no share consumer (KIP-932: from 1.21.0)", version())
}
