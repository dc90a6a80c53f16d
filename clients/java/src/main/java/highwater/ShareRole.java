package highwater;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;

/**
 * A share-group consumer (KIP-932, {@link KafkaShareConsumer}) with explicit acknowledgement,
 * the role "share_consumer" of the worker protocol (docs/adding-a-client.md, "Share groups").
 *
 * <p>Compiled only against kafka-clients 4.2 or later, where share groups are generally
 * available (harness/clients/java.py leaves this file out of older builds; {@link Worker} loads
 * it by name, so the rest of the worker builds against every release).
 *
 * <p>Commands: "subscribe" (topics); "poll" (timeout_ms), answered with the records acquired, one
 * entry per partition: {"topic", "partition", "offsets": [...], "values": [...], "deliveries":
 * [delivery count or null, ...]}; "acknowledge" ({"acks": [[topic, partition, offset, kind],
 * ...]}, kind one of accept, release, reject, for records of the last poll); "commit"
 * (timeout_ms: commitSync); "close". How each acknowledgement ended is written as an event
 * {"event": "acked", "topic", "partition", "offsets", "error"} from the library's commit
 * callback, which it runs on this thread inside poll, commitSync and close, so the events come
 * before the reply of the command that completed them.
 */
final class ShareRole implements Worker.Role {
  private final KafkaShareConsumer<byte[], byte[]> consumer;
  /** The records of the last poll that returned any, by topic, partition and offset. */
  private final Map<TopicPartition, Map<Long, ConsumerRecord<byte[], byte[]>>> held = new HashMap<>();
  private boolean closed;

  ShareRole(Properties props) {
    props.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
    props.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
    // every record is acknowledged one by one, with the kind the harness chose
    props.putIfAbsent("share.acknowledgement.mode", "explicit");
    consumer = new KafkaShareConsumer<>(props);
    consumer.setAcknowledgementCommitCallback(ShareRole::acked);
  }

  /** One acknowledgement outcome as the library reports it: an event line, before the reply. */
  static void acked(Map<TopicIdPartition, Set<Long>> offsets, Exception error) {
    for (Map.Entry<TopicIdPartition, Set<Long>> e : offsets.entrySet()) {
      ObjectNode ev = Worker.JSON.createObjectNode();
      ev.put("event", "acked");
      ev.put("topic", e.getKey().topic());
      ev.put("partition", e.getKey().partition());
      var list = ev.putArray("offsets");
      for (long o : new TreeSet<>(e.getValue())) {
        list.add(o);
      }
      if (error == null) {
        ev.putNull("error");
      } else {
        ev.put("error", Worker.errorText(error));
      }
      Worker.emit(ev);
    }
  }

  @Override
  public ObjectNode handle(String op, JsonNode cmd, long id) {
    switch (op) {
      case "subscribe":
        {
          List<String> topics = new ArrayList<>();
          cmd.path("topics").forEach(t -> topics.add(t.asText()));
          consumer.subscribe(topics);
          return Worker.reply(id);
        }
      case "poll":
        return poll(id, cmd.path("timeout_ms").asLong(200));
      case "acknowledge":
        acknowledge(cmd.path("acks"));
        return Worker.reply(id);
      case "commit":
        consumer.commitSync(Duration.ofMillis(cmd.path("timeout_ms").asLong(30000)));
        return Worker.reply(id);
      case "close":
        close(Duration.ofMillis(cmd.path("timeout_ms").asLong(10000)));
        return Worker.reply(id);
      default:
        throw new IllegalArgumentException("unknown share consumer command " + op);
    }
  }

  private ObjectNode poll(long id, long timeoutMs) {
    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(timeoutMs));
    held.clear();
    Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> parts = new HashMap<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      TopicPartition tp = new TopicPartition(r.topic(), r.partition());
      parts.computeIfAbsent(tp, k -> new ArrayList<>()).add(r);
      held.computeIfAbsent(tp, k -> new HashMap<>()).put(r.offset(), r);
    }
    Worker.emit(g -> writeParts(g, id, parts));
    return null;
  }

  private static void writeParts(JsonGenerator g, long id, Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> parts)
      throws IOException {
    g.writeStartObject();
    g.writeNumberField("id", id);
    g.writeBooleanField("ok", true);
    g.writeArrayFieldStart("parts");
    for (Map.Entry<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> p : parts.entrySet()) {
      g.writeStartObject();
      g.writeStringField("topic", p.getKey().topic());
      g.writeNumberField("partition", p.getKey().partition());
      g.writeArrayFieldStart("offsets");
      for (ConsumerRecord<byte[], byte[]> r : p.getValue()) {
        g.writeNumber(r.offset());
      }
      g.writeEndArray();
      g.writeArrayFieldStart("values");
      for (ConsumerRecord<byte[], byte[]> r : p.getValue()) {
        byte[] v = r.value();
        if (v == null) {
          g.writeNull();
        } else {
          g.writeString(new String(v, java.nio.charset.StandardCharsets.UTF_8));
        }
      }
      g.writeEndArray();
      g.writeArrayFieldStart("deliveries");
      for (ConsumerRecord<byte[], byte[]> r : p.getValue()) {
        Optional<Short> n = r.deliveryCount();
        if (n.isPresent()) {
          g.writeNumber(n.get());
        } else {
          g.writeNull();
        }
      }
      g.writeEndArray();
      g.writeEndObject();
    }
    g.writeEndArray();
    g.writeEndObject();
  }

  private void acknowledge(JsonNode acks) {
    for (JsonNode a : acks) {
      TopicPartition tp = new TopicPartition(a.get(0).asText(), a.get(1).asInt());
      long offset = a.get(2).asLong();
      ConsumerRecord<byte[], byte[]> r = held.getOrDefault(tp, Map.of()).get(offset);
      if (r == null) {
        throw new IllegalArgumentException("no record " + tp + "@" + offset + " in the last poll");
      }
      consumer.acknowledge(r, AcknowledgeType.valueOf(a.get(3).asText().toUpperCase(java.util.Locale.ROOT)));
    }
  }

  @Override
  public void close(Duration timeout) {
    if (!closed) {
      closed = true;
      consumer.close(timeout);
    }
  }
}
