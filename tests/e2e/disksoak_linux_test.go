//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/smallfs"
)

// TestDiskSoakSustainedLoad is a soak, run by hand: cached conversations
// flat out through the real relay with its ledger alone on a 200 MiB
// tmpfs, sampling the database and WAL sizes, then counting answers by
// status. It prints figures and asserts only that every request was
// answered.
//
//	RELAY_DISK_SOAK=1 RELAY_DISK_SOAK_SECONDS=20 go test ./tests/e2e -run TestDiskSoakSustainedLoad -v
func TestDiskSoakSustainedLoad(t *testing.T) {
	if os.Getenv("RELAY_DISK_SOAK") == "" {
		t.Skip("set RELAY_DISK_SOAK=1 to run this soak")
	}
	secs, _ := strconv.Atoi(os.Getenv("RELAY_DISK_SOAK_SECONDS"))
	if secs <= 0 {
		secs = 20
	}
	dir := smallfs.Mount(t, "200m")
	db := filepath.Join(dir, "data", "ledger.sqlite")
	r := startRelayWith(t, fmt.Sprintf("\treasoning_cache {\n\t\tdatabase %s\n\t\tenabled true\n\t\tmax_concurrent 64\n\t}", db), "")
	// the default DEBUG level logs every request; that is not what is measured
	deadline := time.Now().Add(time.Duration(secs) * time.Second)

	var mu sync.Mutex
	status := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := r.client(relayToken)
			var msgs []openai.ChatCompletionMessageParamUnion
			for i := 0; time.Now().Before(deadline); i++ {
				if len(msgs) >= 20 {
					msgs = nil
				}
				msgs = append(msgs, userMsg(fmt.Sprintf("soak w%d turn %d", w, i)))
				text, err := run(t, c, openai.ChatCompletionNewParams{Model: "cursor-fast", Messages: msgs}, i%2 == 0)
				key := "200"
				if err != nil {
					var ae *openai.Error
					if errors.As(err, &ae) {
						key = strconv.Itoa(ae.StatusCode)
					} else {
						key = "transport error"
					}
					msgs = msgs[:len(msgs)-1]
				} else {
					msgs = append(msgs, openai.AssistantMessage(text))
				}
				mu.Lock()
				status[key]++
				mu.Unlock()
			}
		}(w)
	}
	var wal, dbs []int64
	for time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		wal = append(wal, fsize(db+"-wal"))
		dbs = append(dbs, fsize(db))
	}
	wg.Wait()
	slices.Sort(wal)
	mib := func(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	total := 0
	for _, n := range status {
		total += n
	}
	var free syscall.Statfs_t
	_ = syscall.Statfs(dir, &free)
	fmt.Printf("disk soak: %d requests in %ds (%.0f/s) on a 200 MiB tmpfs: answers %v; WAL p50 %s, max %s; database %s at the end; %s free\n",
		total, secs, float64(total)/float64(secs), status, mib(wal[len(wal)/2]), mib(wal[len(wal)-1]),
		mib(dbs[len(dbs)-1]), mib(int64(free.Bavail)*free.Bsize))
	if status["200"] != total {
		t.Errorf("not every request was answered: %v", status)
	}
}

func fsize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}
