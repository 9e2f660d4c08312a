// Command trove is the Trove registry for Terraform and OpenTofu providers
// and modules:
// `trove serve` runs the server, and the other commands manage a running
// server through its management API. main only parses arguments and wires
// packages together; see run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/config"
)

// version is the release version, set at build time with
// -ldflags "-X main.version=1.2.3".
var version = ""

// defaultAddr is the server the client commands talk to without --addr.
const defaultAddr = "https://localhost:8443"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills the process at once
	}()
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed (e.g. the server refused it)
	exitUsage = 2 // the command line is wrong
)

// env is what a command may use of its process.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// secret reads a password from the terminal without echo; nil when
	// stdin is not a terminal.
	secret secretPrompter
}

// command is one `trove` subcommand.
type command struct {
	name     string // "namespace create"
	args     string // synopsis of positional arguments and flags
	summary  string // one line
	examples []string
	minArgs  int // positional arguments
	maxArgs  int
	client   bool // takes --addr, --token, --ca-file and --json
	// connOnly limits the client flags to --addr and --ca-file, for the
	// commands that bring their own token (login, logout).
	connOnly bool

	// setup defines the command's flags on fs and returns the function
	// that runs it with the positional arguments.
	setup func(fs *flag.FlagSet, cl *cli) func(ctx context.Context, args []string) error

	// raw, if set, replaces flag parsing: it gets the arguments unparsed
	// and returns an exit code (used by serve, whose flags config owns).
	raw func(ctx context.Context, e env, args []string) int
	// rawFlags returns the flags of a raw command for its help, and envOf
	// their environment variables.
	rawFlags func() *flag.FlagSet
	envOf    func(flagName string) string
}

// commands lists every subcommand in help order.
func commands() []*command {
	return []*command{
		serveCommand(), migrateCommand(), storeCopyCommand(), backupCommand(), backupVerifyCommand(), restoreCommand(), adminTokenCommand(),
		loginCommand(), logoutCommand(),
		namespaceCreate(), namespaceList(), namespaceShow(), namespaceUpdate(), namespaceDelete(),
		keyAdd(), keyGenerate(), keyList(), keyRemove(),
		tokenCreate(), tokenList(), tokenExpire(), tokenRevoke(),
		userCreate(), userList(), userShow(), userPasswd(), userDisable(), userEnable(), userAdmin(),
		memberAdd(), memberList(), memberRemove(),
		trustPolicyCreate(), trustPolicyList(), trustPolicyDelete(),
		webhookCreate(), webhookList(), webhookShow(), webhookUpdate(), webhookDelete(), webhookTest(), webhookDeliveries(), webhookRedeliver(),
		auditCommand(),
		publishCommand(),
		providerList(), providerShow(), providerPackage(), providerDocsUpload(),
		lifecycleCommand(false, "deprecate"), lifecycleCommand(false, "undeprecate"),
		lifecycleCommand(false, "revoke"), lifecycleCommand(false, "restore"), providerDelete(),
		modulePublish(), moduleList(), moduleShow(), moduleDelete(),
		moduleSourceAdd(), moduleSourceList(), moduleSourceRemove(), moduleSourceSync(),
		lifecycleCommand(true, "deprecate"), lifecycleCommand(true, "undeprecate"),
		lifecycleCommand(true, "revoke"), lifecycleCommand(true, "restore"),
		mirrorUpstreamList(), mirrorUpstreamShow(), mirrorUpstreamSet(), mirrorUpstreamRemove(), mirrorSyncCommand(),
		mirrorHoldList(), mirrorHoldApprove(), mirrorHoldUnapprove(), mirrorHoldDeny(), mirrorHoldUndeny(),
		ssoProviderList(), ssoProviderSet(), ssoProviderRemove(), ssoMappingList(), ssoMappingAdd(), ssoMappingRemove(),
		consumersCommand(), provenancePolicySet(), provenancePolicyShow(), provenancePolicyDelete(),
		lockCommand(), verifyCommand(), ociPushCommand(), ociPullCommand(), bundleExport(), bundleImport(), gcCommand(),
		retentionSet(), retentionShow(), retentionDelete(),
		versionCommand(), completionCommand(),
	}
}

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// run runs the trove command line args and returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr, secret: newPrompter(stdin, stderr)}
	cmds := commands()
	if len(args) == 0 {
		printOverview(stderr, cmds)
		return exitUsage
	}
	switch args[0] {
	case "__complete": // the completion scripts' helper, listed nowhere
		return runComplete(ctx, e, args[1:])
	case "--version", "-version":
		args = []string{"version"}
	case "help", "--help", "-help", "-h":
		if len(args) > 1 {
			if c, _ := lookup(cmds, args[1:]); c != nil {
				printHelp(stdout, c)
				return exitOK
			}
			if name, _ := groupName(cmds, args[1:]); name != "" {
				printGroup(stdout, name, groupOf(cmds, name))
				return exitOK
			}
			fmt.Fprintf(stderr, "trove: unknown command %q\n", strings.Join(args[1:], " "))
			return exitUsage
		}
		printOverview(stdout, cmds)
		return exitOK
	}
	c, rest := lookup(cmds, args)
	if c == nil {
		name, tail := groupName(cmds, args)
		if name == "" && strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(stderr, "trove: flags go after the command: %s\nRun 'trove help' for the list of commands.\n", flagsFirst(cmds, args))
			return exitUsage
		}
		if name == "" {
			fmt.Fprintf(stderr, "trove: unknown command %q%s\nRun 'trove help' for the list of commands.\n", args[0], didYouMean(args[0], firstWords(cmds)))
			return exitUsage
		}
		group := groupOf(cmds, name)
		if len(tail) > 0 && (tail[0] == "--help" || tail[0] == "-h" || tail[0] == "-help") {
			printGroup(stdout, name, group)
			return exitOK
		}
		if len(tail) > 0 {
			var subs []string
			for _, c := range group {
				subs = append(subs, strings.TrimPrefix(c.name, name+" "))
			}
			fmt.Fprintf(stderr, "trove %s: unknown subcommand %q%s\n\n", name, tail[0], didYouMean(tail[0], subs))
		}
		printGroup(stderr, name, group)
		return exitUsage
	}
	if c.raw != nil {
		return c.raw(ctx, e, rest)
	}
	return runCommand(ctx, e, c, rest)
}

// didYouMean returns " (did you mean X?)" for the candidate closest to
// word, or "" when none is close.
func didYouMean(word string, candidates []string) string {
	if near := config.Closest(word, candidates); near != "" {
		return " (did you mean " + near + "?)"
	}
	return ""
}

// firstWords returns the first word of every command name, once each.
func firstWords(cmds []*command) []string {
	var words []string
	for _, c := range cmds {
		w, _, _ := strings.Cut(c.name, " ")
		if !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	return words
}

// flagsFirst answers a command line that starts with flags: the same line
// with the flags after the command ("trove namespace list --addr X"), or
// the general form when no command follows the flags.
func flagsFirst(cmds []*command, args []string) string {
	for i := 1; i < len(args); i++ {
		if c, rest := lookup(cmds, args[i:]); c != nil {
			line := append(append([]string{"trove", c.name}, rest...), args[:i]...)
			return strings.Join(line, " ")
		}
	}
	return "trove COMMAND [ARGS] [FLAGS]"
}

// lookup finds the command named by the first one or two arguments and
// returns it with the remaining arguments.
func lookup(cmds []*command, args []string) (*command, []string) {
	// The longest name wins: "backup verify FILE" is not "backup" with
	// the arguments "verify FILE".
	var best *command
	var rest []string
	for _, c := range cmds {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name &&
			(best == nil || len(words) > len(strings.Fields(best.name))) {
			best, rest = c, args[len(words):]
		}
	}
	return best, rest
}

// groupOf returns the commands whose name starts with the words of name
// ("namespace", "mirror upstream").
func groupOf(cmds []*command, name string) []*command {
	var out []*command
	for _, c := range cmds {
		if strings.HasPrefix(c.name, name+" ") {
			out = append(out, c)
		}
	}
	return out
}

// groupName returns the longest group ("mirror upstream" before "mirror")
// that args start with, and the arguments after it; "" if args start
// with none.
func groupName(cmds []*command, args []string) (string, []string) {
	for n := len(args); n > 0; n-- {
		if name := strings.Join(args[:n], " "); len(groupOf(cmds, name)) > 0 {
			return name, args[n:]
		}
	}
	return "", args
}

func runCommand(ctx context.Context, e env, c *command, args []string) int {
	fs := flag.NewFlagSet("trove "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	cl := &cli{env: e}
	if c.client {
		cl.defineFlags(fs, c)
	}
	runFn := c.setup(fs, cl)
	positional, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(e.stdout, c)
		return exitOK
	}
	if err == nil {
		switch {
		case len(positional) < c.minArgs:
			err = usagef("missing arguments: want %s", c.args)
		case len(positional) > c.maxArgs:
			err = usagef("unexpected argument %q: want %s", positional[c.maxArgs], c.args)
		}
	}
	if err == nil {
		err = cl.explain(runFn(ctx, positional))
	}
	return report(e, c, err)
}

// report prints err as the user should see it and returns the exit code.
func report(e env, c *command, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) || isFlagError(err) {
		fmt.Fprintf(e.stderr, "trove %s: %s\n%s\nRun 'trove %s --help' for details.\n", c.name, err, usageLine(c), c.name)
		return exitUsage
	}
	fmt.Fprintf(e.stderr, "trove: %s%s\n", printable(err.Error()), hint(err))
	return exitError
}

// printable replaces control characters (a server's message could carry
// terminal escape sequences) except line breaks.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && isControl(r) {
			return '?'
		}
		return r
	}, s)
}

// isControl reports whether r is a C0 or C1 control character.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 }

// flagError marks errors from the flag package, which are usage errors,
// rewritten in the style of the other usage errors (see
// config.FlagErrorMessage).
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }

func isFlagError(err error) bool {
	var fe *flagError
	return errors.As(err, &fe)
}

// hint adds advice to errors whose cause users commonly misread.
func hint(err error) string {
	if client.IsUntrustedCertificate(err) {
		return "\n(trust the server's certificate authority with --ca-file or TROVE_CA_FILE; `trove serve` prints the path of its self-signed one)"
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "\n(is `trove serve` running there? Point --addr or TROVE_ADDR at the server)"
	}
	return ""
}

// parseInterspersed parses the flags of fs wherever they appear in args and
// returns the positional arguments in order. "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &flagError{errors.New(config.FlagErrorMessage(fs, err))}
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func printOverview(w io.Writer, cmds []*command) {
	fmt.Fprintln(w, "Trove is a registry for Terraform and OpenTofu providers and modules.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: trove COMMAND [ARGS] [FLAGS]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	width := nameWidth(cmds)
	for _, c := range cmds {
		printEntry(w, width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags may come before or after the arguments.")
	fmt.Fprintln(w, "trove --version prints the version.")
	fmt.Fprintln(w, "Run 'trove COMMAND --help' for a command's flags and examples.")
}

// nameWidth is the width of the command name column: at least 20, and
// the longest name.
func nameWidth(cmds []*command) int {
	width := 20
	for _, c := range cmds {
		width = max(width, len(c.name))
	}
	return width
}

func printGroup(w io.Writer, name string, group []*command) {
	fmt.Fprintf(w, "Usage: trove %s SUBCOMMAND [ARGS] [FLAGS]\n\nSubcommands:\n", name)
	width := nameWidth(group)
	for _, c := range group {
		printEntry(w, width, c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'trove %s SUBCOMMAND --help' for details.\n", name)
}

// usageLine returns "Usage: trove NAME ARGS", without a trailing space
// for a command without arguments.
func usageLine(c *command) string {
	return strings.TrimRight("Usage: trove "+c.name+" "+c.args, " ")
}

func printHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "%s\n\n%s\n", strings.Join(wrapText(usageLine(c), helpColumns-6), "\n      "), strings.Join(wrapText(c.summary, helpColumns), "\n"))
	if c.setup != nil {
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.setup(fs, &cli{})
		if hasFlags(fs) {
			fmt.Fprintln(w, "\nFlags:")
			printFlags(w, fs, nil)
		}
		if c.client {
			cfs := flag.NewFlagSet(c.name, flag.ContinueOnError)
			(&cli{}).defineFlags(cfs, c)
			fmt.Fprintln(w, "\nClient flags:")
			printFlags(w, cfs, clientEnv)
		}
	}
	if c.rawFlags != nil {
		fmt.Fprintln(w, "\nFlags (each also read from the environment variable in brackets):")
		printFlags(w, c.rawFlags(), c.envOf)
	}
	if len(c.examples) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, ex := range c.examples {
			// A long command goes on over lines ended by a backslash,
			// as a shell reads it.
			fmt.Fprintf(w, "  %s\n", strings.Join(wrapText(ex, helpColumns-6), " \\\n      "))
		}
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// printFlags prints each flag of fs with its usage, default and, where
// envOf names one, its environment variable.
func printFlags(w io.Writer, fs *flag.FlagSet, envOf func(string) string) {
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	for _, f := range flags {
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if arg != "" && !isBoolFlag(f) {
			line += " " + arg
		}
		fmt.Fprintln(w, line)
		def := f.DefValue
		if g, ok := f.Value.(flag.Getter); ok {
			if _, isDuration := g.Get().(time.Duration); isDuration {
				if d, err := time.ParseDuration(def); err == nil {
					def = config.ShortDuration(d) // 10m, as the docs write it, not 10m0s
				}
			}
		}
		if def != "" && def != "0" && def != "0s" && def != "false" {
			usage += " (default " + def + ")"
		}
		if envOf != nil {
			if name := envOf(f.Name); name != "" {
				usage += " [$" + name + "]"
			}
		}
		for _, l := range wrapText(usage, helpColumns-8) {
			fmt.Fprintf(w, "        %s\n", l)
		}
	}
}

// helpColumns is the width help text is wrapped to, a terminal's default.
const helpColumns = 80

// printEntry prints a command and its summary in two columns, the name
// width wide, the summary wrapped to helpColumns.
func printEntry(w io.Writer, width int, name, summary string) {
	indent := strings.Repeat(" ", 2+width+1)
	for i, l := range wrapText(summary, max(helpColumns-len(indent), 20)) {
		if i == 0 {
			fmt.Fprintf(w, "  %-*s %s\n", width, name, l)
			continue
		}
		fmt.Fprintf(w, "%s%s\n", indent, l)
	}
}

// wrapText breaks s into lines of at most width bytes at spaces; a word
// longer than width stands on a line of its own.
func wrapText(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func serveCommand() *command {
	return &command{
		name: "serve", args: "[FLAGS]",
		summary: "Run the Trove server; the first start creates the data directory and prints the first admin token.",
		examples: []string{
			"trove serve",
			"trove serve --listen :443 --public-url https://registry.internal --tls-cert cert.pem --tls-key key.pem",
			"TROVE_DATA_DIR=/var/lib/trove trove serve --insecure-http --listen 127.0.0.1:8080 --public-url https://registry.internal",
		},
		raw: serve,
		rawFlags: func() *flag.FlagSet {
			var cfg config.Config
			return cfg.FlagSet("serve")
		},
		envOf: config.EnvVar,
	}
}

// serve loads the configuration and runs the server until ctx ends.
func serve(ctx context.Context, e env, args []string) int {
	c, _ := lookup(commands(), []string{"serve"})
	cfg, err := config.Load(args, e.getenv)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(e.stdout, c)
		return exitOK
	}
	if err != nil {
		return report(e, c, usagef("%s", strings.ReplaceAll(err.Error(), "\n", "\n  ")))
	}
	if err := runServer(ctx, cfg, e.stdout, e.stderr); err != nil {
		fmt.Fprintf(e.stderr, "trove: %s\n", err)
		return exitError
	}
	return exitOK
}

func versionCommand() *command {
	return &command{
		name: "version", args: "", summary: "Print the version of trove.",
		examples: []string{"trove version"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(context.Context, []string) error {
				fmt.Fprintf(cl.stdout, "trove %s\n", buildVersion())
				return nil
			}
		},
	}
}

// buildVersion returns the version set at link time (-ldflags "-X
// main.version=1.2.3"), else the one the go tool recorded (see
// versionFromBuildInfo).
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return versionFromBuildInfo(bi)
}

// versionFromBuildInfo returns the version of a build without ldflags:
// the main module's version for `go install trove.dev/trove/cmd/trove@v1.2.3`
// ("1.2.3"), else, for a build in a checkout, "dev-" followed by the
// commit (12 hex digits) and "-modified" when the tree had changes
// ("dev-0123456789ab-modified"), else "dev".
func versionFromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return strings.TrimPrefix(v, "v")
	}
	var revision string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision == "" {
		return "dev"
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if modified {
		revision += "-modified"
	}
	return "dev-" + revision
}
