package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

func completionCommand() *command {
	return &command{
		name: "completion", args: "bash|zsh|fish", minArgs: 1, maxArgs: 1,
		summary: "Print a shell completion script for trove's commands, subcommands and flags.",
		examples: []string{
			"source <(trove completion bash)            # in ~/.bashrc",
			"trove completion zsh > \"${fpath[1]}/_trove\" # zsh, then restart it",
			"trove completion fish > ~/.config/fish/completions/trove.fish",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(_ context.Context, args []string) error {
				spec := completionSpec(commands())
				switch args[0] {
				case "bash":
					writeBashCompletion(cl.stdout, spec, false)
				case "zsh":
					writeBashCompletion(cl.stdout, spec, true)
				case "fish":
					writeFishCompletion(cl.stdout, spec)
				default:
					return usagef("unknown shell %q: want bash, zsh or fish", args[0])
				}
				return nil
			}
		},
	}
}

// completions is what the shell completes: the first words, the next
// words of each group ("namespace", and "mirror" and "mirror upstream"),
// and the flags of each command ("namespace create", "serve").
type completions struct {
	top   []string
	subs  map[string][]string
	flags map[string][]string
	// values are the values of a command's flags with fixed choices, or
	// namespacesWord for namespace names: "token create --scope".
	values map[string]string
	// nsArg holds the commands whose first argument is a namespace name,
	// with the number of words of the command name.
	nsArg map[string]int
}

// namespacesWord marks, among the values of a flag, that the namespaces of
// the server the command line talks to are completed.
const namespacesWord = "@namespaces"

// completePlatforms are the os_arch values completed for --platform: the
// platforms terraform and tofu are released for.
var completePlatforms = []string{
	"darwin_amd64", "darwin_arm64", "freebsd_386", "freebsd_amd64", "freebsd_arm", "linux_386", "linux_amd64",
	"linux_arm", "linux_arm64", "openbsd_386", "openbsd_amd64", "solaris_amd64", "windows_386", "windows_amd64", "windows_arm64",
}

// flagValues returns the values completed for flag of command cmd, "" for
// none: a flag's choices where they are fixed, or namespacesWord.
func flagValues(cmd, flagName string) string {
	switch cmd + " --" + flagName {
	case "trust-policy create --scope":
		return "publish read"
	case "audit --namespace", "publish --namespace", "token create --namespace", "token list --namespace", "sso mapping add --namespace":
		return namespacesWord
	}
	switch flagName {
	case "log-level":
		return "debug info warn error"
	case "log-format":
		return "text json"
	case "index-backend":
		return "sqlite postgres"
	case "blob-backend":
		return "fs s3"
	case "download-mode":
		return "redirect proxy"
	case "visibility":
		return "private public"
	case "role":
		return "reader publisher admin"
	case "scope":
		return "read publish admin"
	case "platform":
		return strings.Join(completePlatforms, " ")
	case "events":
		// The event types only: the shells would glob "provider.*".
		return strings.Join(registry.EventTypes, " ")
	}
	return ""
}

// completionSpec derives the completions from the command table, so that
// they never lag behind it.
func completionSpec(cmds []*command) completions {
	s := completions{subs: map[string][]string{}, flags: map[string][]string{}, values: map[string]string{}, nsArg: map[string]int{}}
	seen := map[string]bool{}
	for _, c := range cmds {
		words := strings.Fields(c.name)
		if !seen[words[0]] {
			seen[words[0]] = true
			s.top = append(s.top, words[0])
		}
		for i := 1; i < len(words); i++ {
			group := strings.Join(words[:i], " ")
			if !slices.Contains(s.subs[group], words[i]) {
				s.subs[group] = append(s.subs[group], words[i])
			}
		}
		s.flags[c.name] = commandFlags(c)
		for _, f := range s.flags[c.name] {
			if v := flagValues(c.name, strings.TrimPrefix(f, "--")); v != "" {
				s.values[c.name+" "+f] = v
			}
		}
		if first, _, _ := strings.Cut(c.args, " "); c.client && (first == "NAMESPACE" || first == "[NAMESPACE]" ||
			slices.Contains([]string{"namespace show", "namespace update", "namespace delete"}, c.name)) {
			s.nsArg[c.name] = len(words)
		}
	}
	s.top = append(s.top, "help")
	return s
}

// groups returns the groups of s with the given number of words, sorted.
func (s completions) groups(words int) []string {
	var out []string
	for g := range s.subs {
		if len(strings.Fields(g)) == words {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out
}

// commandFlags returns "--name" for every flag of c, sorted.
func commandFlags(c *command) []string {
	var sets []*flag.FlagSet
	switch {
	case c.setup != nil:
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		cl := &cli{}
		if c.client {
			cl.defineFlags(fs, c)
		}
		c.setup(fs, cl)
		sets = append(sets, fs)
	case c.rawFlags != nil:
		sets = append(sets, c.rawFlags())
	}
	out := []string{"--help"}
	for _, fs := range sets {
		fs.VisitAll(func(f *flag.Flag) { out = append(out, "--"+f.Name) })
	}
	sort.Strings(out)
	return out
}

// writeBashCompletion writes a bash completion function; for zsh it is
// loaded through bashcompinit.
func writeBashCompletion(w io.Writer, s completions, zsh bool) {
	if zsh {
		fmt.Fprint(w, "#compdef trove\n# trove completion for zsh (through bashcompinit)\nautoload -U +X bashcompinit && bashcompinit\n")
	} else {
		fmt.Fprint(w, "# trove completion for bash\n")
	}
	fmt.Fprint(w, `_trove() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local first=${COMP_WORDS[1]} key
    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "`+strings.Join(s.top, " ")+`" -- "$cur"))
        return
    fi
    key=$first
    case $first in
`)
	for _, g := range s.groups(1) {
		fmt.Fprintf(w, "        %s)\n            if [[ $COMP_CWORD -eq 2 ]]; then\n                COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n                return\n            fi\n            key=\"%s ${COMP_WORDS[2]}\"\n",
			g, strings.Join(s.subs[g], " "), g)
		// Groups of groups: "mirror upstream list".
		for _, g2 := range s.groups(2) {
			if strings.HasPrefix(g2, g+" ") {
				fmt.Fprintf(w, "            if [[ $key == %q ]]; then\n                if [[ $COMP_CWORD -eq 3 ]]; then\n                    COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n                    return\n                fi\n                key=\"$key ${COMP_WORDS[3]}\"\n            fi\n",
					g2, strings.Join(s.subs[g2], " "))
			}
		}
		fmt.Fprint(w, "            ;;\n")
	}
	fmt.Fprint(w, `        help|completion)
            if [[ $first == completion ]]; then
                COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "`+strings.Join(s.top, " ")+`" -- "$cur"))
            fi
            return ;;
    esac
    local prev=${COMP_WORDS[COMP_CWORD-1]} values=
    if [[ $prev == "=" && $COMP_CWORD -ge 2 ]]; then
        prev=${COMP_WORDS[COMP_CWORD-2]}
    fi
    if [[ $prev == -* ]]; then
        prev=${prev#-}
        case "$key --${prev#-}" in
`)
	keys := make([]string, 0, len(s.values))
	for k := range s.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "            %q) values=%q ;;\n", k, s.values[k])
	}
	fmt.Fprint(w, `        esac
    elif [[ $cur != -* ]]; then
        case $key in
`)
	nsCmds := make([]string, 0, len(s.nsArg))
	for n := range s.nsArg {
		nsCmds = append(nsCmds, n)
	}
	sort.Strings(nsCmds)
	for _, n := range nsCmds {
		fmt.Fprintf(w, "            %q) [[ $COMP_CWORD -eq %d ]] && values=%s ;;\n", n, s.nsArg[n]+1, namespacesWord)
	}
	fmt.Fprint(w, `        esac
    fi
    if [[ $values == `+namespacesWord+` ]]; then
        values=$("${COMP_WORDS[0]}" __complete namespaces -- "${COMP_WORDS[@]:1}" 2>/dev/null)
        COMPREPLY=($(compgen -W "$values" -- "$cur"))
        return
    fi
    if [[ -n $values ]]; then
        COMPREPLY=($(compgen -W "$values" -- "$cur"))
        return
    fi
    if [[ $cur == -* ]]; then
        local flags=
        case $key in
`)
	names := make([]string, 0, len(s.flags))
	for n := range s.flags {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "            %q) flags=%q ;;\n", n, strings.Join(s.flags[n], " "))
	}
	fmt.Fprint(w, `        esac
        COMPREPLY=($(compgen -W "$flags" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o default -F _trove trove
`)
}

// writeFishCompletion writes fish completions.
func writeFishCompletion(w io.Writer, s completions) {
	fmt.Fprintln(w, "# trove completion for fish")
	fmt.Fprintln(w, "complete -c trove -f")
	fmt.Fprintf(w, "complete -c trove -n __fish_use_subcommand -a %q\n", strings.Join(s.top, " "))
	for _, g := range append(s.groups(1), s.groups(2)...) {
		fmt.Fprintf(w, "complete -c trove -n '%s; and not __fish_seen_subcommand_from %s' -a %q\n",
			fishSeen(strings.Fields(g)), strings.Join(s.subs[g], " "), strings.Join(s.subs[g], " "))
	}
	fmt.Fprintln(w, "complete -c trove -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'")
	names := make([]string, 0, len(s.flags))
	for n := range s.flags {
		names = append(names, n)
	}
	sort.Strings(names)
	const fishNamespaces = "(trove __complete namespaces -- (commandline -opc)[2..-1] 2>/dev/null)"
	for _, n := range names {
		cond := fishSeen(strings.Fields(n))
		for _, f := range s.flags[n] {
			switch v := s.values[n+" "+f]; v {
			case "":
				fmt.Fprintf(w, "complete -c trove -n '%s' -l %s\n", cond, strings.TrimPrefix(f, "--"))
			case namespacesWord:
				fmt.Fprintf(w, "complete -c trove -n '%s' -l %s -x -a '%s'\n", cond, strings.TrimPrefix(f, "--"), fishNamespaces)
			default:
				fmt.Fprintf(w, "complete -c trove -n '%s' -l %s -x -a %q\n", cond, strings.TrimPrefix(f, "--"), v)
			}
		}
		if words, ok := s.nsArg[n]; ok {
			fmt.Fprintf(w, "complete -c trove -n '%s; and test (count (commandline -opc)) -eq %d' -a '%s'\n", cond, words+1, fishNamespaces)
		}
	}
	fmt.Fprintln(w, "complete -c trove -F -n 'not __fish_use_subcommand'") // file arguments
}

// fishSeen is the fish condition that every one of words was typed.
func fishSeen(words []string) string {
	conds := make([]string, len(words))
	for i, w := range words {
		conds[i] = "__fish_seen_subcommand_from " + w
	}
	return strings.Join(conds, "; and ")
}

// completeTimeout bounds the request of "trove __complete namespaces": a
// shell waits for it while the user waits for the shell.
const completeTimeout = 2 * time.Second

// runComplete answers the completion scripts' "trove __complete namespaces
// -- WORDS...": the names of the namespaces the server of the command line
// WORDS talks to (its --addr, --token and --ca-file, else TROVE_* and the
// stored credentials, as the command would) shows its token, one a line.
// It prints nothing on any failure and always exits 0: a completion must
// never print errors into the user's command line.
func runComplete(ctx context.Context, e env, args []string) int {
	if len(args) < 1 || args[0] != "namespaces" {
		return exitOK
	}
	words := args[1:]
	if len(words) > 0 && words[0] == "--" {
		words = words[1:]
	}
	cl := &cli{env: e, set: map[string]bool{}}
	for i := 0; i < len(words); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(words[i], "-"), "=")
		if !strings.HasPrefix(words[i], "-") {
			continue
		}
		var dst *string
		switch name {
		case "addr":
			dst = &cl.addr
		case "token":
			dst = &cl.token
		case "ca-file":
			dst = &cl.caFile
		default:
			continue
		}
		if !hasValue {
			if i+1 >= len(words) {
				break
			}
			i++
			value = words[i]
		}
		*dst = value
		cl.set[name] = true
	}
	c, err := cl.client()
	if err != nil {
		return exitOK
	}
	ctx, cancel := context.WithTimeout(ctx, completeTimeout)
	defer cancel()
	list, err := c.ListNamespaces(ctx)
	if err != nil {
		return exitOK
	}
	for _, ns := range list {
		// Only valid names: the shells expand the words they complete
		// from, and a hostile server could send "$(...)".
		if n, err := registry.ParseNamespace(ns.Name); err == nil && n == ns.Name {
			fmt.Fprintln(e.stdout, ns.Name)
		}
	}
	return exitOK
}
