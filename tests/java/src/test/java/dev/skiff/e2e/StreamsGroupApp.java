package dev.skiff.e2e;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The word count of {@link StreamsGroupTest} (streams rebalance protocol, exactly_once_v2), and
 * a main() that runs one instance of it in a JVM of its own, so that the test can kill it hard
 * ({@code destroyForcibly}): a close inside the test JVM would leave the group politely.
 *
 * <p>{@code main(bootstrap, applicationId, input, output, stateDir, applicationServerPort)}
 * prints {@code STATE <state>} on each state change and {@code ACTIVE <tasks>} whenever the
 * set of active tasks of its stream threads changes (tasks as {@code subtopology_partition}),
 * then runs until killed.
 */
final class StreamsGroupApp {
    static final String STORE = "word-counts";

    private StreamsGroupApp() {}

    static Topology topology(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\s+")))
                .groupBy((key, word) -> word)
                .count(Materialized.as(STORE))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    static Properties props(String bootstrap, String appId, Path stateDir, int port) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        // KIP-1071: the broker assigns the tasks (StreamsGroupHeartbeat), not a client leader.
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        // Interactive queries: each member reports this endpoint and learns the others'.
        p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "127.0.0.1:" + port);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.String().getClass());
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        return p;
    }

    /** The active tasks of an instance's stream threads, as {@code subtopology_partition}. */
    static Set<String> activeTasks(KafkaStreams streams) {
        Set<String> tasks = new TreeSet<>();
        for (ThreadMetadata t : streams.metadataForLocalThreads()) {
            t.activeTasks().forEach(m -> tasks.add(m.taskId().subtopology() + "_" + m.taskId().partition()));
        }
        return tasks;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: StreamsGroupApp bootstrap appId input output stateDir port");
            System.exit(2);
        }
        KafkaStreams streams = new KafkaStreams(
                topology(args[2], args[3]),
                props(args[0], args[1], Path.of(args[4]), Integer.parseInt(args[5])));
        CountDownLatch dead = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            say("STATE " + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                dead.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            say("ERROR " + e);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        Set<String> last = null;
        while (dead.getCount() > 0) {
            Set<String> now = activeTasks(streams);
            if (!now.equals(last)) {
                say("ACTIVE " + String.join(",", now));
                last = now;
            }
            Thread.sleep(200);
        }
        System.exit(1);
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
