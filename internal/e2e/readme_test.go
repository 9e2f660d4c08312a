package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The README's walkthrough is run as written, by a new user with a fresh
// home directory and a clone of this repository, once with terraform and
// once with tofu standing in for it. Its code blocks lie between
// <!-- walkthrough:start --> and <!-- walkthrough:end -->; a comment
// right before a block tells the test what to do with it (a block without
// one is a shell block run in the user's second shell):
//
//	<!-- walkthrough: server -->         the block starts trove serve (in the first shell)
//	<!-- walkthrough: file NAME -->      the block is the content of NAME in the current directory
//	<!-- walkthrough: expect TEXT -->    the shell block's output must contain TEXT
//	<!-- walkthrough: skip -->           the block is an alternative the test does not take
//
// ```text blocks show output and are not run.
//
// The one liberty taken: the server is started on a free port with
// --listen and --public-url (the README says what that changes: it prints
// an extra export line, which is pasted like the others). The banner's
// indented lines are pasted into the second shell, as the README says.

var walkthroughDirective = regexp.MustCompile(`^<!-- walkthrough: (server|skip|file \S+|expect .+) -->$`)

// walkthroughBlock is one code block of the walkthrough.
type walkthroughBlock struct {
	line      int    // of the opening fence in README.md
	lang      string // "sh", "hcl", ...
	directive string // "" or the directive before the block
	body      string
}

// readWalkthrough returns the code blocks of README.md's walkthrough.
func readWalkthrough(t *testing.T, readme string) []walkthroughBlock {
	t.Helper()
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks    []walkthroughBlock
		in        bool // between start and end
		block     *walkthroughBlock
		directive string
		started   bool
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case block != nil:
			if strings.TrimSpace(line) == "```" {
				blocks = append(blocks, *block)
				block = nil
				continue
			}
			block.body += line + "\n"
		case line == "<!-- walkthrough:start -->":
			in, started = true, true
		case line == "<!-- walkthrough:end -->":
			in = false
		case !in:
		case walkthroughDirective.MatchString(line):
			directive = walkthroughDirective.FindStringSubmatch(line)[1]
		case strings.HasPrefix(line, "```"):
			block = &walkthroughBlock{line: n, lang: strings.TrimPrefix(line, "```"), directive: directive}
			directive = ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !started || len(blocks) == 0 {
		t.Fatalf("%s has no walkthrough (<!-- walkthrough:start --> ... <!-- walkthrough:end -->) with code blocks", readme)
	}
	return blocks
}

func TestReadmeWalkthrough(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	blocks := readWalkthrough(t, filepath.Join(root, "README.md"))
	forEachClient(t, func(t *testing.T, client string) {
		runWalkthrough(t, root, client, blocks)
	})
}

// walkthrough is the state of one user following the README.
type walkthrough struct {
	t      *testing.T
	home   string
	dir    string   // the current directory of the second shell
	env    []string // the second shell's exported environment
	state  string   // file with the shell's exported variables between blocks
	server *exec.Cmd
}

func runWalkthrough(t *testing.T, root, client string, blocks []walkthroughBlock) {
	w := newWalkthrough(t, root, client)
	for _, b := range blocks {
		where := fmt.Sprintf("README.md:%d", b.line)
		switch {
		case b.directive == "skip":
		case b.directive == "server":
			w.startServer(where, b.body)
		case strings.HasPrefix(b.directive, "file "):
			name := strings.TrimPrefix(b.directive, "file ")
			if err := os.WriteFile(filepath.Join(w.dir, name), []byte(b.body), 0o644); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
		case b.lang == "text" || b.lang == "console":
			// Output shown to the reader.
		case b.lang == "sh":
			out := w.shell(where, b.body)
			if want, ok := strings.CutPrefix(b.directive, "expect "); ok && !strings.Contains(flatten(out), want) {
				t.Fatalf("%s: the output lacks %q:\n%s", where, want, out)
			}
		default:
			t.Fatalf("%s: a ```%s block needs a walkthrough directive (file NAME or skip)", where, b.lang)
		}
	}
}

// newWalkthrough makes a fresh home directory, a clone of the repository
// to work in, and a PATH on which terraform is the client under test.
func newWalkthrough(t *testing.T, root, client string) *walkthrough {
	home := t.TempDir()
	clone := filepath.Join(home, "trove")
	copyTrackedFiles(t, root, clone)

	clientBin := requireTerraform(t)
	if client == clientTofu {
		clientBin = requireTofu(t)
	}
	bin := filepath.Join(home, "tools")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// The user's terraform is the client under test.
	if err := os.Symlink(clientBin, filepath.Join(bin, "terraform")); err != nil {
		t.Fatal(err)
	}
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	// PATH: the client, go's bin directory (where go install puts trove,
	// as the README says), go, and the system's tools (gpg, sh).
	path := strings.Join([]string{bin, filepath.Join(home, "go", "bin"), filepath.Dir(goBin), "/usr/local/bin", "/usr/bin", "/bin"}, ":")
	w := &walkthrough{
		t:    t,
		home: home,
		dir:  clone,
		env: []string{
			"HOME=" + home, "PATH=" + path, "LANG=C", "TZ=UTC", "CHECKPOINT_DISABLE=1",
			// The module and build caches of this machine: a new user's
			// first build would fetch and compile the same.
			"GOMODCACHE=" + goEnv("GOMODCACHE"), "GOCACHE=" + goEnv("GOCACHE"),
			"GOPROXY=" + goEnv("GOPROXY"), "GOFLAGS=", "GOTOOLCHAIN=local",
		},
		state: filepath.Join(home, ".walkthrough-state"),
	}
	if err := os.WriteFile(w.state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.stopServer)
	return w
}

// shell runs a shell block in the second shell: with the variables of the
// blocks before it, in its current directory, failing at the first
// failing command. Assignments are exported (set -a) so that they reach
// the next block.
func (w *walkthrough) shell(where, body string) string {
	w.t.Helper()
	script := fmt.Sprintf("set -a\n. %q\ncd %q\nset -e\n%s\nset +e\nexport -p > %q\npwd > %q.pwd\n",
		w.state, w.dir, body, w.state+".next", w.state)
	ctx, cancel := context.WithTimeout(w.t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Env = w.env
	cmd.Dir = w.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("%s: the block failed (%v):\n%s\noutput:\n%s", where, err, body, out)
	}
	if err := os.Rename(w.state+".next", w.state); err != nil {
		w.t.Fatal(err)
	}
	pwd, err := os.ReadFile(w.state + ".pwd")
	if err != nil {
		w.t.Fatal(err)
	}
	w.dir = strings.TrimSpace(string(pwd))
	return string(out)
}

// startServer runs the server block in the background (the user's first
// shell) on a free port, waits for its banner and "pastes" the banner's
// export lines into the second shell.
func (w *walkthrough) startServer(where, body string) {
	w.t.Helper()
	port := freePort(w.t)
	addr := "https://localhost:" + strconv.Itoa(port)
	line := strings.TrimSpace(body)
	if strings.Contains(line, "\n") || !strings.HasPrefix(line, "trove serve") {
		w.t.Fatalf("%s: the server block must be one `trove serve` command, not %q", where, body)
	}
	line += fmt.Sprintf(" --listen 127.0.0.1:%d --public-url %s", port, addr)
	logFile := filepath.Join(w.home, "serve.log")
	script := fmt.Sprintf(". %q\ncd %q\nexec %s", w.state, w.dir, line)
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = w.env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		w.t.Fatal(err)
	}
	f, err := os.Create(logFile)
	if err != nil {
		w.t.Fatal(err)
	}
	defer f.Close()
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("%s: %v", where, err)
	}
	w.server = cmd
	banner := newLineLog(stdout)
	ctx, cancel := context.WithTimeout(w.t.Context(), startTimeout)
	defer cancel()
	if _, ok := banner.wait(ctx, "Trove listening on "+addr); !ok {
		log, _ := os.ReadFile(logFile)
		w.t.Fatalf("%s: %s printed no 'Trove listening on %s':\n%s\n%s", where, line, addr, banner, log)
	}
	// The banner is complete when the server logs that it started.
	for {
		log, _ := os.ReadFile(logFile)
		if strings.Contains(string(log), "trove started") {
			break
		}
		select {
		case <-ctx.Done():
			w.t.Fatalf("%s: trove serve did not log 'trove started':\n%s\n%s", where, banner, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	// Paste the banner's indented lines: the commands it gives.
	var exports []string
	for _, l := range strings.Split(banner.String(), "\n") {
		if strings.HasPrefix(l, "  ") {
			exports = append(exports, strings.TrimSpace(l))
		}
	}
	for _, want := range []string{"export TROVE_ADDR=", "export SSL_CERT_FILE=", "mkdir -p ~/.terraform.d && cp "} {
		if !slices.ContainsFunc(exports, func(l string) bool { return strings.HasPrefix(l, want) }) {
			w.t.Fatalf("%s: the banner lacks a line %q...:\n%s", where, want, banner)
		}
	}
	// The server listens before it prints the banner: commands that run
	// at once wait in the listen queue at worst.
	w.shell(where+" (pasting the banner's export lines)", strings.Join(exports, "\n"))
}

func (w *walkthrough) stopServer() {
	if w.server == nil || w.server.Process == nil {
		return
	}
	w.server.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { w.server.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		w.server.Process.Kill()
		<-done
	}
}

// copyTrackedFiles copies the repository at root into dst as a clone
// would have it: the files git tracks (and new ones it does not ignore),
// without .git.
func copyTrackedFiles(t *testing.T, root, dst string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		info, err := os.Lstat(src)
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the working tree
			}
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dst, name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, info.Mode().Perm()|fs.FileMode(0o200)); err != nil {
			t.Fatal(err)
		}
	}
}
