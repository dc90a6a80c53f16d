package highwater;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;

/**
 * One Kafka client (a producer or a consumer) driven by highwater over stdin/stdout, one JSON
 * object per line (harness/clients/java.py is the other end; docs/adding-a-client.md, "Java").
 *
 * <p>The first line names the role and the client's properties; every later line is a command
 * with an "id". Replies carry the id ("ok": true, or "error": "Class: message"). A producer's
 * sends are not replied to: their outcome comes later, from the producer's I/O thread, as a line
 * {"send": id, "offset": n} or {"send": id, "error", "error_class", "sync"}. A consumer reports
 * the position changes the library made on its own as "event" lines, written before the reply
 * of the command during which they were seen, and the partitions its rebalance listener was
 * told it gave up ("revoke" events, reason "revoked" or "lost"; protocol 2). A poll's records
 * are answered compactly, one entry per partition ({@link Consumer#writeRecords}): runs of
 * offsets, the values, runs of leader epochs and the serving replica, streamed straight to the
 * buffered stdout.
 *
 * <p>Transactions (KIP-98, a producer with "transactional.id"): "init_transactions",
 * "begin_transaction", "commit_transaction", "abort_transaction" and "send_offsets" (offsets
 * with a consumer's group metadata, KIP-447), each answered ok or with the error of the call.
 * Those that wait for the coordinator take a "timeout_ms": Java bounds each by max.block.ms
 * only, so they run on a thread of their own and are answered by the deadline
 * ("TimeoutException: ... did not complete within"), and init/commit/abort are called again on
 * Java's TimeoutException while the deadline allows (Java documents them as safe to retry). A
 * consumer answers "group_metadata" with its groupMetadata() fields.
 *
 * <p>A process of highwater's: it exits when its stdin closes and, whatever its stdin does,
 * halts within half a second of its parent's death (the watchdog), so it never outlives the test.
 */
public final class Worker {
  static final ObjectMapper JSON = new ObjectMapper();
  /** Writes lines straight to the buffered stdout, leaving it open after each line. */
  private static final JsonFactory LINES =
      JsonFactory.builder().disable(StreamWriteFeature.AUTO_CLOSE_TARGET).build();

  private static final BufferedOutputStream OUT =
      new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
  private static boolean outBroken;

  private Worker() {}

  /** Writes one line's JSON value to a generator. */
  interface LineWriter {
    void write(JsonGenerator g) throws IOException;
  }

  /**
   * One line to the driver, written by {@code line} with a streaming generator; callbacks of the
   * producer's I/O thread write too. A broken stdout (the driver is gone) is noted once on
   * stderr and lines are dropped, as a PrintStream would: stdin's end or the watchdog ends us.
   */
  static synchronized void emit(LineWriter line) {
    if (outBroken) {
      return;
    }
    try {
      JsonGenerator g = LINES.createGenerator(OUT, JsonEncoding.UTF8);
      line.write(g);
      g.close(); // flushes into OUT, which stays open
      OUT.write('\n');
      OUT.flush();
    } catch (IOException e) {
      outBroken = true;
      System.err.println("highwater worker: stdout is broken, dropping lines: " + e);
    }
  }

  static void emit(ObjectNode line) {
    emit(g -> JSON.writeTree(g, line));
  }

  /** An error as the history records it: "Class: message" (simple class name). */
  static String errorText(Throwable t) {
    return t.getClass().getSimpleName() + ": " + t.getMessage();
  }

  static ObjectNode reply(long id) {
    ObjectNode r = JSON.createObjectNode();
    r.put("id", id);
    r.put("ok", true);
    return r;
  }

  /** Halts the JVM once the parent process is gone (re-parented), checked twice a second. */
  static void startWatchdog() {
    long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
    Thread t =
        new Thread(
            () -> {
              while (true) {
                long now = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
                boolean alive = ProcessHandle.of(parent).map(ProcessHandle::isAlive).orElse(false);
                if (now != parent || !alive) {
                  System.err.println("highwater worker: parent " + parent + " is gone, halting");
                  Runtime.getRuntime().halt(3);
                }
                try {
                  Thread.sleep(500);
                } catch (InterruptedException e) {
                  return;
                }
              }
            },
            "highwater-watchdog");
    t.setDaemon(true);
    t.start();
  }

  /** kafka-clients' own version (its AppInfoParser moved between releases; this file did not). */
  static String kafkaClientsVersion() {
    Properties p = new Properties();
    try (java.io.InputStream s = KafkaConsumer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
      if (s != null) {
        p.load(s);
      }
    } catch (java.io.IOException e) {
      return "unknown";
    }
    return p.getProperty("version", "unknown");
  }

  static Properties properties(JsonNode config) {
    Properties props = new Properties();
    Iterator<Map.Entry<String, JsonNode>> it = config.fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      props.put(e.getKey(), e.getValue().asText());
    }
    return props;
  }

  public static void main(String[] args) throws Exception {
    System.setOut(System.err); // stdout is the protocol's: anything else printed goes to the log
    startWatchdog();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String first = in.readLine();
    if (first == null) {
      return;
    }
    JsonNode hello = JSON.readTree(first);
    Role role;
    try {
      Properties props = properties(hello.get("config"));
      role = makeRole(hello.get("role").asText(), props);
    } catch (RuntimeException | ReflectiveOperationException e) {
      ObjectNode r = JSON.createObjectNode();
      r.put("id", 0);
      r.put("error", errorText(e));
      emit(r);
      return;
    }
    ObjectNode ready = reply(0);
    ready.put("version", kafkaClientsVersion());
    ready.put("protocol", 2); // the worker protocol version (docs/adding-a-client.md)
    emit(ready);
    String line;
    while ((line = in.readLine()) != null) {
      JsonNode cmd = JSON.readTree(line);
      long id = cmd.path("id").asLong();
      String op = cmd.path("op").asText();
      try {
        ObjectNode r = role.handle(op, cmd, id);
        if (r != null) {
          emit(r);
        }
      } catch (RuntimeException e) {
        ObjectNode r = JSON.createObjectNode();
        r.put("id", id);
        r.put("error", errorText(e));
        emit(r);
      }
      if ("close".equals(op)) {
        break;
      }
    }
    role.close(Duration.ofSeconds(5)); // no-op after a close command
    System.exit(0);
  }

  static Role makeRole(String name, Properties props) throws ReflectiveOperationException {
    switch (name) {
      case "producer":
        return new Producer(props);
      case "consumer":
        return new Consumer(props);
      case "share_consumer":
      case "share_admin":
        // built only against kafka-clients 4.2+ (Share*.java): loaded by name
        Class<?> share;
        try {
          share = Class.forName("share_admin".equals(name) ? "highwater.ShareAdminRole" : "highwater.ShareRole");
        } catch (ClassNotFoundException e) {
          throw new UnsupportedOperationException(
              "share groups need kafka-clients 4.2 or later, this worker runs " + kafkaClientsVersion());
        }
        try {
          return (Role) share.getDeclaredConstructor(Properties.class).newInstance(props);
        } catch (java.lang.reflect.InvocationTargetException e) {
          Throwable cause = e.getCause();
          throw cause instanceof RuntimeException ? (RuntimeException) cause : new IllegalStateException(cause);
        }
      default:
        throw new IllegalArgumentException("unknown role " + name);
    }
  }

  interface Role {
    /**
     * The reply to a command, or null when there is none to write here: a producer's send (its
     * outcome comes later) or a poll with records (written by the poll itself, streamed).
     */
    ObjectNode handle(String op, JsonNode cmd, long id);

    void close(Duration timeout);
  }

  static final class Producer implements Role {
    private static final long RETRY_PAUSE_NS = TimeUnit.MILLISECONDS.toNanos(100);
    private final KafkaProducer<byte[], byte[]> producer;
    /** Runs the transactional calls that wait for the coordinator (see bounded). */
    private final ExecutorService txnThread =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "highwater-transactions");
              t.setDaemon(true);
              return t;
            });
    private boolean closed;

    Producer(Properties props) {
      props.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
      props.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
      producer = new KafkaProducer<>(props);
    }

    @Override
    public ObjectNode handle(String op, JsonNode cmd, long id) {
      switch (op) {
        case "send":
          send(cmd, id);
          return null;
        case "flush":
          producer.flush();
          return reply(id);
        case "init_transactions":
          bounded("initTransactions", cmd, true, producer::initTransactions);
          return reply(id);
        case "begin_transaction":
          producer.beginTransaction(); // local to the client: nothing to wait for
          return reply(id);
        case "commit_transaction":
          bounded("commitTransaction", cmd, true, producer::commitTransaction);
          return reply(id);
        case "abort_transaction":
          bounded("abortTransaction", cmd, true, producer::abortTransaction);
          return reply(id);
        case "send_offsets":
          {
            Map<TopicPartition, OffsetAndMetadata> offsets = offsetsOf(cmd.path("offsets"));
            ConsumerGroupMetadata group = groupOf(cmd.path("group"));
            // not retried: a second AddOffsetsToTxn is not documented as safe; a timeout here
            // leaves the transaction to be aborted
            bounded("sendOffsetsToTransaction", cmd, false, () -> producer.sendOffsetsToTransaction(offsets, group));
            return reply(id);
          }
        case "close":
          close(Duration.ofMillis(cmd.path("timeout_ms").asLong(10000)));
          return reply(id);
        default:
          throw new IllegalArgumentException("unknown producer command " + op);
      }
    }

    /**
     * A transactional call answered within the command's "timeout_ms": run on the transactions
     * thread (Java blocks each call up to max.block.ms), called again on Java's
     * TimeoutException while time is left when {@code retry}, abandoned at the deadline (the
     * call in progress ends within max.block.ms; the driver treats the producer as unusable).
     */
    private void bounded(String what, JsonNode cmd, boolean retry, Runnable call) {
      long timeoutMs = cmd.path("timeout_ms").asLong(10000);
      long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
      Future<?> running =
          txnThread.submit(
              () -> {
                while (true) {
                  try {
                    call.run();
                    return;
                  } catch (TimeoutException e) {
                    if (!retry || System.nanoTime() + RETRY_PAUSE_NS >= deadline) {
                      throw e;
                    }
                  }
                  try {
                    Thread.sleep(TimeUnit.NANOSECONDS.toMillis(RETRY_PAUSE_NS));
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new org.apache.kafka.common.errors.InterruptException(e);
                  }
                }
              });
      try {
        running.get(Math.max(0L, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (java.util.concurrent.TimeoutException e) {
        throw new TimeoutException(what + " did not complete within " + timeoutMs + " ms");
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        if (cause instanceof RuntimeException) {
          throw (RuntimeException) cause;
        }
        throw new IllegalStateException(cause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new org.apache.kafka.common.errors.InterruptException(e);
      }
    }

    static Map<TopicPartition, OffsetAndMetadata> offsetsOf(JsonNode listed) {
      Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
      for (JsonNode o : listed) {
        offsets.put(
            new TopicPartition(o.get("topic").asText(), o.get("partition").asInt()),
            new OffsetAndMetadata(o.get("offset").asLong()));
      }
      return offsets;
    }

    /** A consumer's groupMetadata() rebuilt from its "group_metadata" reply. */
    static ConsumerGroupMetadata groupOf(JsonNode g) {
      JsonNode instance = g.path("group_instance_id");
      return new ConsumerGroupMetadata(
          g.get("group_id").asText(),
          g.get("generation_id").asInt(),
          g.get("member_id").asText(),
          Optional.ofNullable(instance.isTextual() ? instance.asText() : null));
    }

    /**
     * "sync": true when the send failed inside send() itself, on this thread, before the record
     * was appended to the accumulator (metadata or buffer wait timed out, record too large,
     * producer closed): nothing was sent. Failures from the I/O thread came after the append.
     */
    private void send(JsonNode cmd, long id) {
      ProducerRecord<byte[], byte[]> record =
          new ProducerRecord<>(
              cmd.get("topic").asText(),
              cmd.get("partition").asInt(),
              null,
              cmd.get("value").asText().getBytes(StandardCharsets.UTF_8));
      Thread caller = Thread.currentThread();
      boolean[] returned = {false};
      try {
        producer.send(
            record,
            (metadata, exception) -> {
              ObjectNode r = JSON.createObjectNode();
              r.put("send", id);
              if (exception == null) {
                r.put("offset", metadata.offset());
              } else {
                boolean sync;
                synchronized (returned) {
                  sync = Thread.currentThread() == caller && !returned[0];
                }
                r.put("error", errorText(exception));
                r.put("error_class", exception.getClass().getName());
                r.put("sync", sync);
              }
              emit(r);
            });
      } catch (RuntimeException e) { // thrown before anything was queued
        ObjectNode r = JSON.createObjectNode();
        r.put("send", id);
        r.put("error", errorText(e));
        r.put("error_class", e.getClass().getName());
        r.put("sync", true);
        emit(r);
      } finally {
        synchronized (returned) {
          returned[0] = true;
        }
      }
    }

    @Override
    public void close(Duration timeout) {
      if (!closed) {
        closed = true;
        producer.close(timeout); // after the timeout, what is left is aborted: its callbacks run
        txnThread.shutdownNow();
      }
    }
  }

  static final class Consumer implements Role, ConsumerRebalanceListener {
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final boolean grouped;
    /** Where we believe each partition's position is; null: not known (a new position). */
    private final Map<TopicPartition, Long> last = new HashMap<>();
    /** Partitions moved by seekToBeginning: where they land is reported as a reset. */
    private final Map<TopicPartition, Boolean> resetPending = new HashMap<>();

    private final Map<TopicPartition, Metric> replicaMetrics = new HashMap<>();
    /** The preferred-read-replica gauge at the end of the last poll, per partition. */
    private final Map<TopicPartition, Integer> lastPreferred = new HashMap<>();
    private boolean closed;
    /**
     * The auto.offset.reset asked for. The consumer itself runs with "none" and this worker
     * applies the policy: with a policy, Java's consumer seeks to a KIP-320 divergence point on
     * its own and silently, indistinguishable from an out-of-range reset; with "none" it says
     * which (LogTruncationException or another InvalidOffsetException), so each move is
     * reported for what it is, and the positions are the ones Java itself would choose.
     */
    private final String resetPolicy;

    Consumer(Properties props) {
      props.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
      props.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
      resetPolicy = props.getProperty("auto.offset.reset", "latest");
      props.put("auto.offset.reset", "none");
      grouped = props.getProperty("group.id") != null;
      consumer = new KafkaConsumer<>(props);
    }

    static TopicPartition tp(JsonNode cmd) {
      return new TopicPartition(cmd.get("topic").asText(), cmd.get("partition").asInt());
    }

    static void position(String topic, int partition, Long offset, String reason) {
      ObjectNode e = JSON.createObjectNode();
      e.put("event", "position");
      e.put("topic", topic);
      e.put("partition", partition);
      if (offset == null) {
        e.putNull("offset");
      } else {
        e.put("offset", offset);
      }
      e.put("reason", reason);
      emit(e);
    }

    @Override
    public ObjectNode handle(String op, JsonNode cmd, long id) {
      switch (op) {
        case "assign":
          {
            List<TopicPartition> tps = new ArrayList<>();
            for (JsonNode p : cmd.get("partitions")) {
              tps.add(tp(p));
            }
            consumer.assign(tps);
            last.clear();
            replicaMetrics.clear(); // metrics are registered again for a new assignment
            lastPreferred.clear();
            for (TopicPartition t : tps) {
              last.put(t, null);
            }
            return reply(id);
          }
        case "subscribe":
          {
            List<String> topics = new ArrayList<>();
            for (JsonNode t : cmd.get("topics")) {
              topics.add(t.asText());
            }
            consumer.subscribe(topics, this);
            return reply(id);
          }
        case "seek":
          {
            TopicPartition t = tp(cmd);
            consumer.seek(t, cmd.get("offset").asLong());
            last.put(t, cmd.get("offset").asLong()); // the workload records its own seeks
            resetPending.remove(t);
            return reply(id);
          }
        case "seek_to_beginning":
          {
            TopicPartition t = tp(cmd);
            consumer.seekToBeginning(List.of(t)); // resolved lazily, at the next poll
            last.put(t, null);
            resetPending.put(t, true);
            return reply(id);
          }
        case "poll":
          return poll(id, cmd.path("timeout_ms").asLong(200));
        case "commit":
          if (grouped) {
            JsonNode listed = cmd.path("offsets");
            if (listed.isArray()) {
              Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
              for (JsonNode o : listed) {
                offsets.put(
                    new TopicPartition(o.path("topic").asText(), o.path("partition").asInt()),
                    new OffsetAndMetadata(o.path("offset").asLong()));
              }
              consumer.commitSync(offsets);
            } else {
              consumer.commitSync();
            }
          }
          return reply(id);
        case "group_metadata":
          {
            ConsumerGroupMetadata m = consumer.groupMetadata(); // InvalidGroupIdException without a group
            ObjectNode r = reply(id);
            r.put("group_id", m.groupId());
            r.put("generation_id", m.generationId());
            r.put("member_id", m.memberId());
            if (m.groupInstanceId().isPresent()) {
              r.put("group_instance_id", m.groupInstanceId().get());
            } else {
              r.putNull("group_instance_id");
            }
            return r;
          }
        case "close":
          close(Duration.ofSeconds(10));
          return reply(id);
        default:
          throw new IllegalArgumentException("unknown consumer command " + op);
      }
    }

    /** A "revoke" event (protocol 2): a partition this member gave up, as the listener said. */
    static void revoke(TopicPartition t, String reason) {
      ObjectNode e = JSON.createObjectNode();
      e.put("event", "revoke");
      e.put("topic", t.topic());
      e.put("partition", t.partition());
      e.put("reason", reason);
      emit(e);
    }

    private void gaveUp(Collection<TopicPartition> partitions, String reason) {
      for (TopicPartition t : partitions) {
        last.remove(t);
        replicaMetrics.remove(t);
        lastPreferred.remove(t);
        revoke(t, reason);
      }
    }

    @Override
    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
      gaveUp(partitions, "revoked");
    }

    /** Partitions lost (session expired, fenced); Java's default would call onPartitionsRevoked. */
    @Override
    public void onPartitionsLost(Collection<TopicPartition> partitions) {
      gaveUp(partitions, "lost");
    }

    @Override
    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
      // the position is resolved after the callback (committed offset or auto.offset.reset)
      for (TopicPartition t : partitions) {
        last.put(t, null);
        position(t.topic(), t.partition(), null, "rebalance");
      }
    }

    private ObjectNode poll(long id, long timeoutMs) {
      ConsumerRecords<byte[], byte[]> records;
      try {
        records = consumer.poll(Duration.ofMillis(timeoutMs));
      } catch (LogTruncationException e) {
        if (!resetPolicy.equals("none")) {
          // what Java does with a reset policy (SubscriptionState.maybeCompleteValidation):
          // seek to the divergence point, or apply the policy when none is known
          for (Map.Entry<TopicPartition, OffsetAndMetadata> d : e.divergentOffsets().entrySet()) {
            TopicPartition t = d.getKey();
            if (d.getValue() == null) {
              applyResetPolicy(t);
            } else {
              consumer.seek(t, d.getValue());
              position(t.topic(), t.partition(), d.getValue().offset(), "truncation");
              last.put(t, d.getValue().offset());
            }
          }
          ObjectNode r = reply(id);
          r.putArray("parts");
          return r;
        }
        ObjectNode r = reply(id);
        ArrayNode divergent = r.putArray("truncation");
        for (Map.Entry<TopicPartition, OffsetAndMetadata> d : e.divergentOffsets().entrySet()) {
          ObjectNode o = divergent.addObject();
          o.put("topic", d.getKey().topic());
          o.put("partition", d.getKey().partition());
          if (d.getValue() == null) {
            o.putNull("offset");
          } else {
            o.put("offset", d.getValue().offset());
          }
          last.put(d.getKey(), null); // the workload seeks; it records that move
        }
        r.put("error", errorText(e));
        return r;
      } catch (org.apache.kafka.clients.consumer.InvalidOffsetException e) {
        if (resetPolicy.equals("none")) {
          throw e;
        }
        for (TopicPartition t : e.partitions()) { // out of range, or no position: the policy
          applyResetPolicy(t);
        }
        ObjectNode r = reply(id);
        r.putArray("parts");
        return r;
      }
      List<Part> parts = new ArrayList<>();
      for (TopicPartition t : consumer.assignment()) {
        List<ConsumerRecord<byte[], byte[]>> recs = records.records(t);
        Long before = last.get(t);
        Long now = knownPosition(t);
        Integer replica = servingReplica(t); // every poll: it keeps the gauge's last reading
        if (!recs.isEmpty()) {
          long first = recs.get(0).offset();
          if (resetPending.remove(t) != null) {
            position(t.topic(), t.partition(), first, "reset");
          } else if (before != null && first < before) {
            // moved back with no exception seen (cannot happen with "none"; kept honest): a
            // reason naming truncation would excuse a landing above the divergence point
            position(t.topic(), t.partition(), first, "reset");
          }
          parts.add(new Part(t, replica, recs));
          long after = recs.get(recs.size() - 1).offset() + 1;
          last.put(t, now != null && now >= after ? now : after);
        } else if (now != null) {
          if (resetPending.remove(t) != null) {
            position(t.topic(), t.partition(), now, "reset");
          } else if (before != null && now < before) {
            position(t.topic(), t.partition(), now, "reset"); // moved back, as above
          } else if (before != null && now > before) {
            // moved forward with no records: an auto.offset.reset past a log start that moved
            // up (or control records, which carry no values to skip)
            position(t.topic(), t.partition(), now, "reset");
          }
          last.put(t, now);
        }
      }
      // the events above are written first: the reply is one line of its own, after them
      emit(g -> writeRecords(g, id, parts));
      return null;
    }

    /** A partition's records of one poll and the replica that served them. */
    static final class Part {
      final TopicPartition tp;
      final Integer replica;
      final List<ConsumerRecord<byte[], byte[]>> records;

      Part(TopicPartition tp, Integer replica, List<ConsumerRecord<byte[], byte[]>> records) {
        this.tp = tp;
        this.replica = replica;
        this.records = records;
      }
    }

    /** The leader epoch as the history records it: null when the batch carries none. */
    static Integer epochOf(ConsumerRecord<byte[], byte[]> rec) {
      Optional<Integer> e = rec.leaderEpoch();
      return e.isPresent() && e.get() >= 0 ? e.get() : null;
    }

    /**
     * A poll's reply, one entry per partition with records: {"topic", "partition", "replica",
     * "offsets": [first, count, ...] (runs of consecutive offsets), "values": [...] (one a
     * record, null for a null value), "epochs": [epoch or null, count, ...] (runs)}.
     */
    static void writeRecords(JsonGenerator g, long id, List<Part> parts) throws IOException {
      g.writeStartObject();
      g.writeNumberField("id", id);
      g.writeBooleanField("ok", true);
      g.writeArrayFieldStart("parts");
      for (Part p : parts) {
        g.writeStartObject();
        g.writeStringField("topic", p.tp.topic());
        g.writeNumberField("partition", p.tp.partition());
        if (p.replica == null) {
          g.writeNullField("replica");
        } else {
          g.writeNumberField("replica", p.replica);
        }
        List<ConsumerRecord<byte[], byte[]>> recs = p.records;
        int n = recs.size();
        g.writeArrayFieldStart("offsets");
        long runFirst = recs.get(0).offset();
        int runCount = 1;
        for (int i = 1; i < n; i++) {
          long o = recs.get(i).offset();
          if (o == runFirst + runCount) {
            runCount++;
          } else {
            g.writeNumber(runFirst);
            g.writeNumber(runCount);
            runFirst = o;
            runCount = 1;
          }
        }
        g.writeNumber(runFirst);
        g.writeNumber(runCount);
        g.writeEndArray();
        g.writeArrayFieldStart("values");
        for (int i = 0; i < n; i++) {
          byte[] v = recs.get(i).value();
          if (v == null) {
            g.writeNull();
          } else if (isAscii(v)) {
            g.writeUTF8String(v, 0, v.length); // escaped as a String's would be, without the copy
          } else {
            g.writeString(new String(v, StandardCharsets.UTF_8)); // malformed input: U+FFFD, as ever
          }
        }
        g.writeEndArray();
        g.writeArrayFieldStart("epochs");
        Integer runEpoch = epochOf(recs.get(0));
        runCount = 1;
        for (int i = 1; i < n; i++) {
          Integer e = epochOf(recs.get(i));
          if (java.util.Objects.equals(e, runEpoch)) {
            runCount++;
          } else {
            writeEpochRun(g, runEpoch, runCount);
            runEpoch = e;
            runCount = 1;
          }
        }
        writeEpochRun(g, runEpoch, runCount);
        g.writeEndArray();
        g.writeEndObject();
      }
      g.writeEndArray();
      g.writeEndObject();
    }

    static boolean isAscii(byte[] v) {
      for (byte b : v) {
        if (b < 0) {
          return false;
        }
      }
      return true;
    }

    private static void writeEpochRun(JsonGenerator g, Integer epoch, int count) throws IOException {
      if (epoch == null) {
        g.writeNull();
      } else {
        g.writeNumber(epoch);
      }
      g.writeNumber(count);
    }

    /** auto.offset.reset for one partition; where it lands is reported as a reset (resetPending). */
    private void applyResetPolicy(TopicPartition t) {
      if (resetPolicy.equals("earliest")) {
        consumer.seekToBeginning(List.of(t));
      } else {
        consumer.seekToEnd(List.of(t));
      }
      last.put(t, null);
      resetPending.put(t, true);
    }

    /** The position if the consumer has a valid one, without waiting for a lookup. */
    private Long knownPosition(TopicPartition t) {
      try {
        return consumer.position(t, Duration.ZERO);
      } catch (org.apache.kafka.common.errors.TimeoutException e) {
        return null; // awaiting a reset or a validation: not known yet
      }
    }

    /**
     * The replica that served this poll's records of the partition. The gauge read when the
     * poll returns names the replica of the *next* fetch (Java sends it before returning): when
     * the preferred replica's lease (metadata.max.age.ms) has just expired it reads -1 though
     * the records came from the follower. So -1 right after a known replica is that replica; a
     * replica named now is the one that served (a leader that redirects sends no records); -1
     * after -1 is the leader. Known limit: the first records a leader serves itself after a
     * lease ends (its rack lost its in-sync replica) are attributed to the old follower.
     */
    private Integer servingReplica(TopicPartition t) {
      Integer now = preferredReplica(t);
      Integer before = lastPreferred.put(t, now == null ? -1 : now);
      if (now != null && now >= 0) {
        return now;
      }
      if (before != null && before >= 0) {
        return before;
      }
      return leader(t);
    }

    /** KIP-392's preferred-read-replica gauge of the partition (-1: none), null if absent. */
    private Integer preferredReplica(TopicPartition t) {
      Metric m = replicaMetrics.get(t);
      if (m == null) {
        for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
          MetricName n = e.getKey();
          if ("preferred-read-replica".equals(n.name())
              && "consumer-fetch-manager-metrics".equals(n.group())
              // the metric's topic tag has '.' as '_' (FetchManagerMetrics' topic tags)
              && t.topic().replace('.', '_').equals(n.tags().get("topic"))
              && String.valueOf(t.partition()).equals(n.tags().get("partition"))) {
            m = e.getValue();
            replicaMetrics.put(t, m);
            break;
          }
        }
      }
      if (m != null) {
        Object v = m.metricValue();
        if (v instanceof Number) {
          return ((Number) v).intValue();
        }
      }
      return null;
    }

    /** The partition's leader in the consumer's metadata, null if unknown. */
    private Integer leader(TopicPartition t) {
      try {
        for (PartitionInfo p : consumer.partitionsFor(t.topic(), Duration.ZERO)) {
          if (p.partition() == t.partition() && p.leader() != null && p.leader().id() >= 0) {
            return p.leader().id();
          }
        }
      } catch (org.apache.kafka.common.errors.TimeoutException e) {
        return null; // the topic is not in the consumer's metadata (it always is once assigned)
      }
      return null;
    }

    @Override
    public void close(Duration timeout) {
      if (!closed) {
        closed = true;
        consumer.close(timeout);
      }
    }
  }
}
