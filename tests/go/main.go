// Command franzmatrix runs the client-matrix scenarios (issue 6) with franz-go (kgo + kadm +
// kmsg) against one bootstrap address, Skiff or the reference Apache Kafka.
//
// Each scenario runs under its own deadline; a scenario passes only when all its assertions
// held. With -results FILE (run.sh passes $MATRIX_RESULTS) it appends one line per scenario:
//
//	franz-go<TAB><scenario><TAB>PASS|FAIL|SKIP<TAB><note>
//
// It prints "N passed, N failed" last and exits 1 when any scenario failed. Scenarios use
// their own topics and groups (a random suffix per run), so they may run against a broker
// that already holds data. Nothing here is shared between goroutines except through kgo.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"time"
)

// scenario is one matrix row: it returns a short note on success, an error on failure.
type scenario struct {
	id      string
	timeout time.Duration
	run     func(ctx context.Context, env *env) (string, error)
}

// env is what every scenario gets: where the broker is and a per-run name suffix.
type env struct {
	bootstrap string
	suffix    string
	kafka     bool // the broker is the reference Apache Kafka (only used in notes)
}

// name gives a topic or group name unique to this run.
func (e *env) name(base string) string { return "franz-" + base + "-" + e.suffix }

func scenarios() []scenario {
	return []scenario{
		{"admin", 60 * time.Second, runAdmin},
		{"produce_consume", 60 * time.Second, runProduceConsume},
		{"compression", 60 * time.Second, runCompression},
		{"groups", 120 * time.Second, runGroups},
		{"offsets_for_times", 60 * time.Second, runOffsetsForTimes},
		{"compaction", 90 * time.Second, runCompaction},
		{"transactions", 90 * time.Second, runTransactions},
		{"special", 90 * time.Second, runSpecial},
		{"share_groups", 120 * time.Second, runShareGroups},
	}
}

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9092", "broker address host:port")
	results := flag.String("results", "", "append matrix TSV lines to this file")
	only := flag.String("only", "", "comma-separated scenario ids to run (default all)")
	isKafka := flag.Bool("kafka", false, "the broker is the reference Apache Kafka")
	security := flag.Bool("security", false, "run the security scenarios (SEC_* from tests/security/broker.sh)")
	jwtKey := flag.String("jwt-key", "", "with -security and SEC_SASL=1: the RSA key that signs OAUTHBEARER tokens")
	jwksDir := flag.String("write-jwks", "", "write jwt-key.pem and jwks.json to this dir and exit")
	flag.Parse()

	if *jwksDir != "" {
		if err := writeJwks(*jwksDir); err != nil {
			fmt.Fprintf(os.Stderr, "write-jwks: %v\n", err)
			os.Exit(2)
		}
		return
	}
	list := scenarios()
	if *security {
		s, err := readSecEnv(*jwtKey)
		if err != nil {
			fmt.Fprintf(os.Stderr, "security: %v\n", err)
			os.Exit(2)
		}
		list = securityScenarios(s)
	}

	e := &env{
		bootstrap: *bootstrap,
		suffix:    fmt.Sprintf("%d-%04d", time.Now().Unix()%100000, rand.Intn(10000)),
		kafka:     *isKafka,
	}
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}

	var out *os.File
	if *results != "" {
		f, err := os.OpenFile(*results, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cannot open results file %s: %v\n", *results, err)
			os.Exit(2)
		}
		defer f.Close()
		out = f
	}

	passed, failed, skipped := 0, 0, 0
	for _, s := range list {
		if len(want) > 0 && !want[s.id] {
			continue
		}
		start := time.Now()
		note, err := runOne(s, e)
		status := "PASS"
		if errors.Is(err, errSkip) {
			status, note = "SKIP", err.Error()
			skipped++
		} else if err != nil {
			status, note = "FAIL", err.Error()
			failed++
		} else {
			passed++
		}
		fmt.Printf("%-4s %-17s %5.1fs  %s\n", status, s.id, time.Since(start).Seconds(), note)
		if out != nil {
			fmt.Fprintf(out, "franz-go\t%s\t%s\t%s\n", s.id, status, clean(note))
		}
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if failed > 0 {
		os.Exit(1)
	}
}

// runOne runs a scenario under its deadline; a scenario that ignores its context past the
// deadline (plus a grace period) is reported as failed rather than hanging the run.
func runOne(s scenario, e *env) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	type res struct {
		note string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- res{"", fmt.Errorf("panic: %v", p)}
			}
		}()
		n, err := s.run(ctx, e)
		ch <- res{n, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && ctx.Err() != nil {
			r.err = fmt.Errorf("%w (scenario deadline %s hit)", r.err, s.timeout)
		}
		return r.note, r.err
	case <-time.After(s.timeout + 15*time.Second):
		return "", fmt.Errorf("scenario did not return within %s", s.timeout+15*time.Second)
	}
}

// clean makes a note safe for one TSV field.
func clean(s string) string {
	s = strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(s)
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}
