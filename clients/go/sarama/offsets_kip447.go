//go:build highwater_group_metadata

// A Sarama of 1.50.2 or later (harness/clients/sarama.py builds with this tag from then): its
// transactional offsets carry the consumer's group metadata, which TxnOffsetCommit v3 sends so
// the group coordinator fences a member that lost its partitions (KIP-447).
package main

import (
	"highwater/protocol"

	"github.com/IBM/sarama"
)

func addOffsets(ap sarama.AsyncProducer, offsets map[string][]*sarama.PartitionOffsetMetadata, g *protocol.GroupMetadata) error {
	return ap.AddOffsetsToTxnWithGroupMetadata(offsets, &sarama.ConsumerGroupMetadata{
		GroupID:         g.GroupID,
		GenerationID:    g.GenerationID,
		MemberID:        g.MemberID,
		GroupInstanceID: g.GroupInstanceID,
	})
}
