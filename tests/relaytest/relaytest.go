// Package relaytest runs a real Caddy with the reasoning relay for
// end-to-end tests: a Caddy binary (built once per test process, or the one
// named by $RELAY_CADDY_BIN) started from a Caddyfile in its own process,
// with its admin endpoint on a Unix socket, its data under a temporary
// directory, and helpers to reload, stop, kill and read its logs.
package relaytest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TB is the part of testing.TB the harness needs, so that programs such as
// the load harness can run it outside go test.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	Failed() bool
}

// Options describe one Caddy instance.
type Options struct {
	// Global is inserted into the global options block (e.g. a
	// reasoning_cache block).
	Global string
	// Site is the body of the site block that serves the relay, e.g.
	// "reasoning_relay {\n upstream ...\n}". The literal {DIR} is replaced
	// with the instance's directory.
	Site string
	// ExtraSites are complete site blocks appended after the relay's
	// (e.g. a baseline reverse_proxy site on another port).
	ExtraSites string
	// Env adds environment variables for the Caddy process.
	Env []string
	// LogLevel is Caddy's log level; default INFO.
	LogLevel string
	// Dir is the working directory to use (default: a new temporary one);
	// reuse it to restart on the same data.
	Dir string
	// Port is the HTTP port to use (default: a free one).
	Port int
	// GracePeriod is Caddy's grace_period; default 2s.
	GracePeriod string
}

// Caddy is a running Caddy process.
type Caddy struct {
	// BaseURL is the site's address, e.g. http://127.0.0.1:34567.
	BaseURL string
	// Dir is the working directory (Caddyfile, data, admin socket).
	Dir string
	// Admin is the admin address (unix/<dir>/admin.sock).
	Admin string
	// Port is the HTTP port.
	Port int

	t       TB
	opts    Options
	cmd     *exec.Cmd
	logs    *syncBuffer
	exited  chan struct{}
	waitErr error
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary returns the Caddy binary under test: $RELAY_CADDY_BIN when set
// (CI builds it once with xcaddy), otherwise one built from this module's
// caddymodule/cmd/caddy once per test process.
func Binary(t TB) string {
	t.Helper()
	if p := os.Getenv("RELAY_CADDY_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatalf("relaytest: RELAY_CADDY_BIN: %v", err)
		}
		return abs
	}
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		// One binary per user and checkout at a stable path, replaced
		// atomically, so that test processes of one checkout running at the
		// same time share the build, two checkouts (git worktrees) never run
		// each other's code, and nothing piles up in the temporary directory.
		sum := sha256.Sum256([]byte(root))
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("relaytest-bin-%d-%x", os.Getuid(), sum[:6]))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			buildErr = err
			return
		}
		tmp, err := os.CreateTemp(dir, "caddy-*.tmp")
		if err != nil {
			buildErr = err
			return
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		cmd := exec.Command("go", "build", "-o", tmp.Name(), "./caddymodule/cmd/caddy")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		buildPath = filepath.Join(dir, "caddy")
		buildErr = os.Rename(tmp.Name(), buildPath)
	})
	if buildErr != nil {
		t.Fatalf("relaytest: building caddy: %v", buildErr)
	}
	return buildPath
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the module")
	}
	return filepath.Dir(gomod), nil
}

// FreePort returns a TCP port that was free a moment ago on 127.0.0.1.
func FreePort(t TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("relaytest: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// prepare fills opts' directory and port, writes the Caddyfile and returns
// the instance (not started).
func prepare(t TB, opts Options) *Caddy {
	t.Helper()
	if opts.Dir == "" {
		// short path: the admin socket path must fit in sun_path
		dir, err := os.MkdirTemp("", "rt-")
		if err != nil {
			t.Fatalf("relaytest: %v", err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		opts.Dir = dir
	}
	if opts.Port == 0 {
		opts.Port = FreePort(t)
	}
	c := &Caddy{
		t: t, opts: opts, Dir: opts.Dir, Port: opts.Port,
		BaseURL: fmt.Sprintf("http://127.0.0.1:%d", opts.Port),
		Admin:   "unix/" + filepath.Join(opts.Dir, "admin.sock"),
	}
	if err := c.writeCaddyfile(opts); err != nil {
		t.Fatalf("relaytest: %v", err)
	}
	return c
}

// writeCaddyfile writes the Caddyfile for opts.
func (c *Caddy) writeCaddyfile(opts Options) error {
	return os.WriteFile(c.CaddyfilePath(), []byte(c.caddyfile(opts)), 0o600)
}

// command returns the Caddy binary with args, run in the instance's
// directory with HOME and the XDG directories inside it, plus env.
func (c *Caddy) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, Binary(c.t), args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(),
		"HOME="+c.Dir, "XDG_DATA_HOME="+filepath.Join(c.Dir, "xdg-data"),
		"XDG_CONFIG_HOME="+filepath.Join(c.Dir, "xdg-config"))
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// Start writes a Caddyfile for opts, starts Caddy and waits until the site
// accepts connections. The process is stopped when the test ends.
func Start(t TB, opts Options) *Caddy {
	t.Helper()
	c := prepare(t, opts)
	c.logs = &syncBuffer{}
	c.cmd = c.command(context.Background(), c.opts.Env, "run", "--config", c.CaddyfilePath(), "--adapter", "caddyfile")
	c.cmd.Stdout = c.logs
	c.cmd.Stderr = c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("relaytest: starting caddy: %v", err)
	}
	c.exited = make(chan struct{})
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("caddy logs:\n%s", c.Logs())
		}
	})
	c.waitReady()
	return c
}

// CaddyfilePath is where the instance's Caddyfile is written.
func (c *Caddy) CaddyfilePath() string { return filepath.Join(c.Dir, "Caddyfile") }

func (c *Caddy) caddyfile(opts Options) string {
	level := opts.LogLevel
	if level == "" {
		level = "INFO"
	}
	site := strings.ReplaceAll(opts.Site, "{DIR}", opts.Dir)
	global := strings.ReplaceAll(opts.Global, "{DIR}", opts.Dir)
	extra := strings.ReplaceAll(opts.ExtraSites, "{DIR}", opts.Dir)
	grace := opts.GracePeriod
	if grace == "" {
		grace = "2s"
	}
	return fmt.Sprintf(`{
	admin %s
	persist_config off
	storage file_system %s
	auto_https off
	grace_period %s
	log {
		output stderr
		level %s
	}
%s
}

http://127.0.0.1:%d {
	bind 127.0.0.1
%s
}

%s
`, c.Admin, filepath.Join(opts.Dir, "storage"), grace, level, global, opts.Port, site, extra)
}

// logsInfo reports whether the instance logs at INFO or below.
func (c *Caddy) logsInfo() bool {
	switch strings.ToUpper(c.opts.LogLevel) {
	case "", "INFO", "DEBUG":
		return true
	}
	return false
}

// waitReady waits until Caddy listens and has started every app.
func (c *Caddy) waitReady() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-c.exited:
			c.t.Fatalf("relaytest: caddy exited during startup: %v\n%s", c.waitErr, c.Logs())
		default:
		}
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.Port), 200*time.Millisecond)
		if err == nil {
			conn.Close()
			// Caddy starts its apps in no fixed order: the listener can be
			// up before the reasoning cache has opened its ledger. Caddy
			// logs this line once every app has started (at INFO).
			if !c.logsInfo() || strings.Contains(c.Logs(), `"serving initial configuration"`) {
				return
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	c.t.Fatalf("relaytest: caddy did not start within 30s\n%s", c.Logs())
}

// StartErr starts Caddy with opts and expects it to fail; it returns the
// logs of the failed start.
func StartErr(t TB, opts Options) string {
	t.Helper()
	c := prepare(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.command(ctx, c.opts.Env, "run", "--config", c.CaddyfilePath(), "--adapter", "caddyfile").CombinedOutput()
	if err == nil {
		t.Fatalf("relaytest: caddy started although it should have failed:\n%s", out)
	}
	return string(out)
}

// Reload writes a new site/global configuration and runs `caddy reload`
// against the running instance, as an operator would.
func (c *Caddy) Reload(opts Options) error {
	opts.Dir, opts.Port = c.Dir, c.Port
	if err := c.writeCaddyfile(opts); err != nil {
		return err
	}
	out, err := c.command(context.Background(), opts.Env,
		"reload", "--config", c.CaddyfilePath(), "--adapter", "caddyfile", "--address", c.Admin).CombinedOutput()
	if err != nil {
		return fmt.Errorf("caddy reload: %v\n%s", err, out)
	}
	c.opts = opts
	return nil
}

// PID returns the Caddy process's ID (for measuring it, e.g. its peak
// memory in /proc/<pid>/status).
func (c *Caddy) PID() int { return c.cmd.Process.Pid }

// Validate runs `caddy validate` on the Caddyfile for opts (written next
// to the instance's own, which it leaves alone) the way the instance runs:
// in its directory, with its HOME and opts.Env. It returns the combined
// output.
func (c *Caddy) Validate(opts Options) (string, error) {
	opts.Dir, opts.Port = c.Dir, c.Port
	path := filepath.Join(c.Dir, "Caddyfile.validate")
	if err := os.WriteFile(path, []byte(c.caddyfile(opts)), 0o600); err != nil {
		return "", err
	}
	out, err := c.command(context.Background(), opts.Env, "validate", "--config", path, "--adapter", "caddyfile").CombinedOutput()
	return string(out), err
}

// AdminClient returns an HTTP client that talks to the admin socket; use
// it with URLs such as http://admin/config/.
func (c *Caddy) AdminClient() *http.Client {
	sock := strings.TrimPrefix(c.Admin, "unix/")
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
}

// Stop stops Caddy gracefully (SIGTERM) and waits for it, killing it after
// 15s.
func (c *Caddy) Stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// Terminate sends Caddy SIGTERM, as a service manager stopping it would,
// and returns at once: Caddy drains while the test goes on. Use Wait to
// wait for the exit.
func (c *Caddy) Terminate() {
	if c.cmd == nil || c.cmd.Process == nil || c.Exited() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
}

// Wait waits up to limit for the process to end and reports whether it
// did; err is how it ended (nil for exit status 0).
func (c *Caddy) Wait(limit time.Duration) (exited bool, err error) {
	select {
	case <-c.exited:
		return true, c.waitErr
	case <-time.After(limit):
		return false, nil
	}
}

// Kill kills Caddy with SIGKILL and waits for it to be gone.
func (c *Caddy) Kill() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Kill()
	<-c.exited
}

// Exited reports whether the process has ended.
func (c *Caddy) Exited() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// WaitLog waits up to limit for a log line containing substr and reports
// whether one appeared. Caddy logs a request's outcome after its last byte
// was written, so a client can be done before the line exists.
func (c *Caddy) WaitLog(substr string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		if strings.Contains(c.Logs(), substr) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Logs returns everything Caddy wrote to stdout and stderr so far.
func (c *Caddy) Logs() string { return c.logs.String() }

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
