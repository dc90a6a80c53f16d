//go:build !highwater_group_metadata

// A Sarama before 1.50.2: its transactional offsets carry the group id only. TxnOffsetCommit
// then goes without the member's generation and id, so the group coordinator cannot fence a
// member that lost its partitions (no KIP-447): offsets from a zombie copier are taken.
package main

import (
	"highwater/protocol"

	"github.com/IBM/sarama"
)

func addOffsets(ap sarama.AsyncProducer, offsets map[string][]*sarama.PartitionOffsetMetadata, g *protocol.GroupMetadata) error {
	return ap.AddOffsetsToTxn(offsets, g.GroupID)
}
