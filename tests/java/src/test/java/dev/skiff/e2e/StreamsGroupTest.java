package dev.skiff.e2e;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment.TaskIds;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyQueryMetadata;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsMetadata;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Streams groups (KIP-1071, {@code group.protocol=streams}): the broker, not a client leader,
 * assigns the tasks of a Kafka Streams word count (KTable count, exactly_once_v2) through
 * StreamsGroupHeartbeat, and Admin#describeStreamsGroups shows the group.
 *
 * <ol>
 *   <li>one instance counts phase 1 of a known input; its local store answers every word;
 *   <li>two more instances join (one in a JVM of its own): the group becomes Stable with three
 *       members, each owning active tasks, every task assigned once; the instances learn each
 *       other's application.server endpoints (interactive-query metadata); phase 2 is counted;
 *   <li>the separate JVM is killed hard (no leave): once its session times out on the broker
 *       (group.streams.session.timeout.ms, 45 s in Kafka) the two others take over its tasks
 *       and count phase 3;
 *   <li>the committed output (read_committed) ends with each word's exact total, each word's
 *       counts strictly increasing (nothing counted twice across the kill); the changelog is
 *       compacted and the repartition topic has the input's partition count.
 * </ol>
 *
 * <p>It runs against Skiff and, with {@code run.sh --kafka}, against the reference Kafka.
 */
@Timeout(300)
class StreamsGroupTest {
    private static final int PARTITIONS = 6;
    private static final int LINES_PER_PHASE = 200;
    private static final String[] VOCABULARY = {
        "apple", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath",
        "inlet", "jade", "knoll", "larch", "marsh", "north", "oak", "pine",
    };
    /** Two subtopologies (before and after the groupBy repartition), one task per partition. */
    private static final Set<String> ALL_TASKS = new TreeSet<>();

    static {
        for (int sub = 0; sub < 2; sub++) {
            for (int p = 0; p < PARTITIONS; p++) {
                ALL_TASKS.add(sub + "_" + p);
            }
        }
    }

    @Test
    void wordCountScalesOutAndSurvivesAKill(@TempDir Path dirA, @TempDir Path dirB, @TempDir Path dirC)
            throws Exception {
        long started = System.nanoTime();
        String input = Env.unique("java-sgroup-in");
        String output = Env.unique("java-sgroup-out");
        String appId = Env.unique("java-sgroup-app");
        try (Admin admin = Env.admin()) {
            Env.createTopic(admin, input, PARTITIONS, Map.of());
            Env.createTopic(admin, output, 1, Map.of());
        }
        int portA = freePort();
        int portB = freePort();
        int portC = freePort();
        Map<String, Long> expected = new TreeMap<>();

        Instance a = null;
        Instance b = null;
        Child c = null;
        try (Admin admin = Env.admin(); OutputReader out = new OutputReader(output)) {
            // Phase 1: one instance, every task is its own.
            a = new Instance(appId, input, output, dirA, portA);
            produce(input, 1, 0, LINES_PER_PHASE, expected);
            out.awaitCounts(expected, Duration.ofSeconds(90), a);
            assertEquals(ALL_TASKS, StreamsGroupApp.activeTasks(a.streams), "tasks of the only instance");
            StreamsGroupDescription one = awaitGroup(admin, appId, Set.of(portA), Duration.ofSeconds(30));
            assertTopology(one, input, appId);
            assertLocalStore(a, Set.of(portA), expected);
            log(started, "phase 1 counted by one instance");

            // Phase 2: three instances; the third in a JVM of its own, to be killed later.
            c = new Child(appId, input, output, dirC, portC);
            b = new Instance(appId, input, output, dirB, portB);
            StreamsGroupDescription three =
                    awaitGroup(admin, appId, Set.of(portA, portB, portC), Duration.ofSeconds(120));
            log(started, "three members stable: " + summary(three));
            assertTopology(three, input, appId);
            Map<Integer, Set<String>> byPort = tasksByPort(three);
            Instance[] inJvm = {a, b};
            for (Instance i : inJvm) {
                Instance inst = i;
                // The instance's own view (metadataForLocalThreads) agrees with the broker's.
                Env.waitFor("instance on port " + inst.port + " running " + byPort.get(inst.port),
                        Duration.ofSeconds(60), () -> StreamsGroupApp.activeTasks(inst.streams)
                                .equals(byPort.get(inst.port)) && inst.streams.state() == KafkaStreams.State.RUNNING);
            }
            Child child = c;
            Env.waitFor("separate instance running " + byPort.get(portC) + " (it reports " + child.active.get() + ")",
                    Duration.ofSeconds(60), () -> byPort.get(portC).equals(child.active.get()));
            awaitHosts(a, Set.of(portA, portB, portC));
            awaitHosts(b, Set.of(portA, portB, portC));

            produce(input, 2, LINES_PER_PHASE, LINES_PER_PHASE, expected);
            out.awaitCounts(expected, Duration.ofSeconds(90), a, b);
            assertLocalStore(a, Set.of(portA, portB, portC), expected);
            assertLocalStore(b, Set.of(portA, portB, portC), expected);
            log(started, "phase 2 counted by three instances");

            // Phase 3: half the input, then a hard kill (the child may be inside a transaction),
            // then the other half. The survivors take over once the broker drops the member.
            produce(input, 3, 2 * LINES_PER_PHASE, LINES_PER_PHASE / 2, expected);
            long killedAt = System.nanoTime();
            c.kill();
            log(started, "separate instance killed (it held " + byPort.get(portC) + ")");
            produce(input, 3, 2 * LINES_PER_PHASE + LINES_PER_PHASE / 2, LINES_PER_PHASE / 2, expected);
            StreamsGroupDescription two =
                    awaitGroup(admin, appId, Set.of(portA, portB), Duration.ofSeconds(150));
            log(started, "two members stable " + secondsSince(killedAt) + " s after the kill: " + summary(two));
            Map<Integer, Set<String>> after = tasksByPort(two);
            for (Instance i : inJvm) {
                Instance inst = i;
                Env.waitFor("instance on port " + inst.port + " running " + after.get(inst.port),
                        Duration.ofSeconds(60), () -> StreamsGroupApp.activeTasks(inst.streams)
                                .equals(after.get(inst.port)) && inst.streams.state() == KafkaStreams.State.RUNNING);
            }
            out.awaitCounts(expected, Duration.ofSeconds(120), a, b);
            log(started, "phase 3 counted " + secondsSince(killedAt) + " s after the kill");
            awaitHosts(a, Set.of(portA, portB));
            assertLocalStore(a, Set.of(portA, portB), expected);
            assertLocalStore(b, Set.of(portA, portB), expected);

            // Nothing more arrives: a word counted twice would show up as a count above its total.
            out.drain(Duration.ofSeconds(3));
            assertEquals(expected, new TreeMap<>(out.latest), "final committed count per word");
            for (Map.Entry<String, List<Long>> e : out.history.entrySet()) {
                List<Long> counts = e.getValue();
                for (int i = 1; i < counts.size(); i++) {
                    assertTrue(counts.get(i) > counts.get(i - 1),
                            "committed counts of '" + e.getKey() + "' strictly increase: " + counts);
                }
            }
            assertNull(a.error.get(), "instance A: " + a.error.get());
            assertNull(b.error.get(), "instance B: " + b.error.get());

            // Input offsets were committed for the streams group inside the same transactions.
            Map<TopicPartition, OffsetAndMetadata> offsets = admin
                    .listStreamsGroupOffsets(Map.of(appId, new ListStreamsGroupOffsetsSpec()))
                    .partitionsToOffsetAndMetadata(appId).get(30, TimeUnit.SECONDS);
            long consumed = 0;
            for (int p = 0; p < PARTITIONS; p++) {
                OffsetAndMetadata om = offsets.get(new TopicPartition(input, p));
                assertNotNull(om, "committed offset of " + input + "-" + p + " in " + offsets);
                consumed += om.offset();
            }
            assertEquals(3L * LINES_PER_PHASE, consumed, "input offsets committed by the streams group");

            assertInternalTopics(admin, two, appId);
            // For the report only: records of aborted transactions (e.g. the killed instance's
            // open one) are in the log but were hidden from the read_committed reader.
            log(started, "output: " + out.records + " committed records, "
                    + countUncommitted(output) + " read with read_uncommitted");
        } finally {
            if (c != null) {
                c.kill();
            }
            for (Instance i : new Instance[] {a, b}) {
                if (i != null) {
                    i.streams.close(Duration.ofSeconds(30));
                }
            }
        }
        log(started, "done");
    }

    /** The described topology: the input feeds subtopology 0, the repartition topic feeds 1. */
    private static void assertTopology(StreamsGroupDescription d, String input, String appId) {
        Map<String, StreamsGroupSubtopologyDescription> subs = new TreeMap<>();
        d.subtopologies().forEach(s -> subs.put(s.subtopologyId(), s));
        assertEquals(Set.of("0", "1"), subs.keySet(), "subtopologies of " + d);
        assertEquals(List.of(input), subs.get("0").sourceTopics(), "source topics of subtopology 0");
        assertEquals(1, subs.get("0").repartitionSinkTopics().size(), "repartition sinks of subtopology 0");
        String repartition = subs.get("0").repartitionSinkTopics().get(0);
        assertTrue(repartition.startsWith(appId + "-") && repartition.endsWith("-repartition"),
                "repartition topic name " + repartition);
        StreamsGroupSubtopologyDescription.TopicInfo info = subs.get("1").repartitionSourceTopics().get(repartition);
        assertNotNull(info, "subtopology 1 reads " + repartition + ": " + subs.get("1"));
        assertEquals(PARTITIONS, info.partitions(), "decided partitions of " + repartition);
        String changelog = appId + "-" + StreamsGroupApp.STORE + "-changelog";
        assertTrue(subs.get("1").stateChangelogTopics().containsKey(changelog),
                "subtopology 1 declares " + changelog + ": " + subs.get("1"));
    }

    /** The changelog topic is compacted; the repartition topic has the input's partitions. */
    private static void assertInternalTopics(Admin admin, StreamsGroupDescription d, String appId) throws Exception {
        String changelog = appId + "-" + StreamsGroupApp.STORE + "-changelog";
        String repartition = d.subtopologies().stream()
                .filter(s -> s.subtopologyId().equals("0"))
                .findFirst().orElseThrow().repartitionSinkTopics().get(0);
        Map<String, TopicDescription> topics = admin.describeTopics(List.of(changelog, repartition))
                .allTopicNames().get(30, TimeUnit.SECONDS);
        assertEquals(PARTITIONS, topics.get(repartition).partitions().size(), "partitions of " + repartition);
        assertEquals(PARTITIONS, topics.get(changelog).partitions().size(), "partitions of " + changelog);
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, changelog);
        Config cfg = admin.describeConfigs(List.of(res)).all().get(30, TimeUnit.SECONDS).get(res);
        assertNotNull(cfg.get("cleanup.policy"), "cleanup.policy of " + changelog);
        assertEquals("compact", cfg.get("cleanup.policy").value(), "cleanup.policy of " + changelog);
    }

    /**
     * Waits until the group is Stable with one member per expected application.server port,
     * each owning active tasks, and every task assigned (current assignment) exactly once.
     */
    private static StreamsGroupDescription awaitGroup(Admin admin, String appId, Set<Integer> ports, Duration timeout)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        String problem = "not described yet";
        StreamsGroupDescription d = null;
        Set<GroupState> statesSeen = new TreeSet<>();
        while (System.nanoTime() < deadline) {
            d = admin.describeStreamsGroups(List.of(appId)).all().get(30, TimeUnit.SECONDS).get(appId);
            statesSeen.add(d.groupState());
            problem = assignmentProblem(d, ports);
            if (problem == null) {
                System.out.println("StreamsGroupTest: states seen while waiting: " + statesSeen);
                return d;
            }
            Thread.sleep(250);
        }
        fail("group " + appId + " not as expected within " + timeout + " (states seen " + statesSeen + "): "
                + problem + "\n" + d);
        return d;
    }

    private static String assignmentProblem(StreamsGroupDescription d, Set<Integer> ports) {
        if (d.groupState() != GroupState.STABLE) {
            return "state " + d.groupState();
        }
        Set<Integer> endpoints = new TreeSet<>();
        Map<String, Integer> owners = new TreeMap<>();
        for (StreamsGroupMemberDescription m : d.members()) {
            if (m.userEndpoint().isEmpty()) {
                return "member " + m.memberId() + " has no endpoint";
            }
            endpoints.add(m.userEndpoint().get().port());
            List<String> tasks = tasks(m.assignment().activeTasks());
            if (tasks.isEmpty()) {
                return "member on port " + m.userEndpoint().get().port() + " has no active task";
            }
            if (!tasks.equals(tasks(m.targetAssignment().activeTasks()))) {
                return "member on port " + m.userEndpoint().get().port() + " still reconciling";
            }
            tasks.forEach(t -> owners.merge(t, 1, Integer::sum));
        }
        if (d.members().size() != ports.size() || !endpoints.equals(ports)) {
            return d.members().size() + " members with endpoints " + endpoints + ", want " + ports;
        }
        if (!owners.keySet().equals(ALL_TASKS)) {
            return "active tasks " + owners.keySet() + ", want " + ALL_TASKS;
        }
        for (Map.Entry<String, Integer> e : owners.entrySet()) {
            if (e.getValue() != 1) {
                return "task " + e.getKey() + " is active on " + e.getValue() + " members";
            }
        }
        return null;
    }

    private static List<String> tasks(List<TaskIds> ids) {
        List<String> out = new ArrayList<>();
        for (TaskIds t : ids) {
            t.partitions().forEach(p -> out.add(t.subtopologyId() + "_" + p));
        }
        out.sort(null);
        return out;
    }

    private static Map<Integer, Set<String>> tasksByPort(StreamsGroupDescription d) {
        Map<Integer, Set<String>> out = new TreeMap<>();
        for (StreamsGroupMemberDescription m : d.members()) {
            out.put(m.userEndpoint().orElseThrow().port(), new TreeSet<>(tasks(m.assignment().activeTasks())));
        }
        return out;
    }

    private static String summary(StreamsGroupDescription d) {
        return "epoch " + d.groupEpoch() + ", tasks by endpoint port " + tasksByPort(d);
    }

    /** The instance's interactive-query metadata lists exactly the given application.server ports. */
    private static void awaitHosts(Instance i, Set<Integer> ports) throws InterruptedException {
        AtomicReference<Set<Integer>> seen = new AtomicReference<>();
        Env.waitFor("instance " + i.port + " to know the endpoints " + ports + " (last " + seen + ")",
                Duration.ofSeconds(60), () -> {
                    Set<Integer> now = new TreeSet<>();
                    for (StreamsMetadata m : i.streams.metadataForAllStreamsClients()) {
                        if (m.stateStoreNames().contains(StreamsGroupApp.STORE)) {
                            now.add(m.port());
                        }
                    }
                    seen.set(now);
                    return now.equals(ports);
                });
    }

    /**
     * Interactive queries: each word's active host (queryMetadataForKey) is one of the given
     * endpoints, and when it is this instance, its local store holds the expected count.
     */
    private static void assertLocalStore(Instance i, Set<Integer> ports, Map<String, Long> expected)
            throws InterruptedException {
        AtomicReference<String> problem = new AtomicReference<>();
        Env.waitFor("store of instance " + i.port + " to answer (" + problem + ")", Duration.ofSeconds(60), () -> {
            try {
                ReadOnlyKeyValueStore<String, Long> store = i.streams.store(StoreQueryParameters.fromNameAndType(
                        StreamsGroupApp.STORE, QueryableStoreTypes.<String, Long>keyValueStore()));
                int local = 0;
                for (Map.Entry<String, Long> e : expected.entrySet()) {
                    KeyQueryMetadata md = i.streams.queryMetadataForKey(
                            StreamsGroupApp.STORE, e.getKey(), Serdes.String().serializer());
                    if (md == null || md == KeyQueryMetadata.NOT_AVAILABLE || !ports.contains(md.activeHost().port())) {
                        problem.set("metadata of '" + e.getKey() + "': " + md);
                        return false;
                    }
                    if (md.activeHost().port() == i.port) {
                        local++;
                        Long v = store.get(e.getKey());
                        if (!e.getValue().equals(v)) {
                            problem.set("'" + e.getKey() + "' = " + v + " in the local store, want " + e.getValue());
                            return false;
                        }
                    }
                }
                if (ports.size() == 1 && local != expected.size()) {
                    problem.set("only " + local + " words local on the only instance");
                    return false;
                }
                return true;
            } catch (RuntimeException e) {
                problem.set(e.toString());
                return false;
            }
        });
    }

    /** Produces {@code n} lines (keys line-{first}..) of 1 to 5 words and counts them in expected. */
    private static void produce(String topic, int phase, int first, int n, Map<String, Long> expected) {
        try (KafkaProducer<String, String> p = Env.producer()) {
            for (int i = first; i < first + n; i++) {
                StringBuilder line = new StringBuilder();
                int words = 1 + (i * 7 + phase) % 5;
                for (int w = 0; w < words; w++) {
                    String word = VOCABULARY[(i * 3 + w * 5 + phase) % VOCABULARY.length];
                    line.append(w == 0 ? "" : " ").append(w % 2 == 0 ? word : word.toUpperCase(Locale.ROOT));
                    expected.merge(word, 1L, Long::sum);
                }
                p.send(new ProducerRecord<>(topic, "line-" + i, line.toString()));
            }
            p.flush();
        }
    }

    private static long countUncommitted(String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Env.bootstrap());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long n = 0;
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (c.position(tp) < end && System.nanoTime() < deadline) {
                n += c.poll(Env.POLL).count();
            }
            return n;
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static long secondsSince(long nanos) {
        return TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - nanos);
    }

    private static void log(long started, String what) {
        System.out.printf("StreamsGroupTest: +%.1f s %s%n", (System.nanoTime() - started) / 1e9, what);
    }

    /** An instance inside the test JVM. */
    private static final class Instance {
        final KafkaStreams streams;
        final int port;
        final AtomicReference<Throwable> error = new AtomicReference<>();

        Instance(String appId, String input, String output, Path dir, int port) {
            this.port = port;
            this.streams = new KafkaStreams(StreamsGroupApp.topology(input, output),
                    StreamsGroupApp.props(Env.bootstrap(), appId, dir, port));
            streams.setUncaughtExceptionHandler(e -> {
                error.compareAndSet(null, e);
                return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            streams.start();
        }
    }

    /** An instance in a JVM of its own (StreamsGroupApp.main), killed with destroyForcibly. */
    private static final class Child {
        final Process process;
        final AtomicReference<Set<String>> active = new AtomicReference<>(Set.of());

        Child(String appId, String input, String output, Path dir, int port) throws IOException {
            String java = ProcessHandle.current().info().command()
                    .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            process = new ProcessBuilder(java, "-Xmx256m", "-cp", System.getProperty("java.class.path"),
                    StreamsGroupApp.class.getName(), Env.bootstrap(), appId, input, output, dir.toString(),
                    Integer.toString(port))
                    .redirectErrorStream(true)
                    .start();
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        System.out.println("[separate instance] " + line);
                        if (line.startsWith("ACTIVE ")) {
                            String list = line.substring("ACTIVE ".length()).trim();
                            active.set(list.isEmpty() ? Set.of() : new TreeSet<>(List.of(list.split(","))));
                        }
                    }
                } catch (IOException e) {
                    // The process was killed.
                }
            }, "separate-instance-output");
            reader.setDaemon(true);
            reader.start();
        }

        void kill() throws InterruptedException {
            process.destroyForcibly();
            assertTrue(process.waitFor(30, TimeUnit.SECONDS), "separate instance exited");
        }
    }

    /** Reads the output topic with read_committed from the start: each word's counts in order. */
    private static final class OutputReader implements AutoCloseable {
        final KafkaConsumer<String, Long> consumer;
        final Map<String, Long> latest = new HashMap<>();
        final Map<String, List<Long>> history = new TreeMap<>();
        long records;

        OutputReader(String topic) {
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Env.bootstrap());
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
            consumer = new KafkaConsumer<>(p);
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
        }

        void pollOnce() {
            for (ConsumerRecord<String, Long> r : consumer.poll(Env.POLL)) {
                records++;
                latest.put(r.key(), r.value());
                history.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
            }
        }

        void awaitCounts(Map<String, Long> expected, Duration timeout, Instance... instances) {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!latest.equals(expected) && System.nanoTime() < deadline) {
                for (Instance i : instances) {
                    assertNull(i.error.get(), "instance on port " + i.port + " died: " + i.error.get());
                    assertFalse(i.streams.state() == KafkaStreams.State.ERROR, "instance on port " + i.port);
                }
                pollOnce();
            }
            assertEquals(expected, new TreeMap<>(latest), "committed count per word within " + timeout);
        }

        void drain(Duration quiet) {
            long deadline = System.nanoTime() + quiet.toNanos();
            while (System.nanoTime() < deadline) {
                pollOnce();
            }
        }

        @Override
        public void close() {
            consumer.close();
        }
    }
}
