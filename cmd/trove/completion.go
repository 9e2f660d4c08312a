package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
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
}

// completionSpec derives the completions from the command table, so that
// they never lag behind it.
func completionSpec(cmds []*command) completions {
	s := completions{subs: map[string][]string{}, flags: map[string][]string{}}
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
	for _, n := range names {
		cond := fishSeen(strings.Fields(n))
		for _, f := range s.flags[n] {
			fmt.Fprintf(w, "complete -c trove -n '%s' -l %s\n", cond, strings.TrimPrefix(f, "--"))
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
