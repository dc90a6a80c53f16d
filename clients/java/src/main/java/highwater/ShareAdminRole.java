package highwater;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * What a share group's state says (KIP-932), the role "share_admin" of the worker protocol: its
 * start offset per partition (every record below it is acknowledged or archived) and its lag.
 *
 * <p>Compiled only against kafka-clients 4.2 or later, like {@link ShareRole}. Command:
 * "start_offsets" ({"group", "topic", "partitions", "timeout_ms"}), answered {"offsets":
 * [{"partition", "start_offset", "lag"}]} (lag null when the broker did not compute it).
 */
final class ShareAdminRole implements Worker.Role {
  private final Admin admin;
  private boolean closed;

  ShareAdminRole(Properties props) {
    admin = Admin.create(props);
  }

  @Override
  public ObjectNode handle(String op, JsonNode cmd, long id) {
    switch (op) {
      case "start_offsets":
        return startOffsets(cmd, id);
      case "close":
        close(Duration.ofMillis(cmd.path("timeout_ms").asLong(10000)));
        return Worker.reply(id);
      default:
        throw new IllegalArgumentException("unknown share admin command " + op);
    }
  }

  private ObjectNode startOffsets(JsonNode cmd, long id) {
    String group = cmd.path("group").asText();
    String topic = cmd.path("topic").asText();
    List<TopicPartition> tps = new ArrayList<>();
    for (int p = 0; p < cmd.path("partitions").asInt(); p++) {
      tps.add(new TopicPartition(topic, p));
    }
    Map<TopicPartition, SharePartitionOffsetInfo> got;
    try {
      got =
          admin
              .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(tps)))
              .partitionsToOffsetInfo(group)
              .get(cmd.path("timeout_ms").asLong(10000), TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable cause = e.getCause();
      throw cause instanceof RuntimeException ? (RuntimeException) cause : new IllegalStateException(cause);
    } catch (java.util.concurrent.TimeoutException e) {
      throw new org.apache.kafka.common.errors.TimeoutException("listShareGroupOffsets did not complete in time");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new org.apache.kafka.common.errors.InterruptException(e);
    }
    ObjectNode r = Worker.reply(id);
    ArrayNode out = r.putArray("offsets");
    for (TopicPartition tp : tps) {
      SharePartitionOffsetInfo info = got.get(tp);
      if (info == null) {
        continue; // no state for it: the group never read it
      }
      ObjectNode o = out.addObject();
      o.put("partition", tp.partition());
      o.put("start_offset", info.startOffset());
      if (info.lag().isPresent()) {
        o.put("lag", info.lag().get());
      } else {
        o.putNull("lag");
      }
    }
    return r;
  }

  @Override
  public void close(Duration timeout) {
    if (!closed) {
      closed = true;
      admin.close(timeout);
    }
  }
}
