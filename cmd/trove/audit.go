package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
)

// parseSince reads a --since/--until value: a duration back from now
// ("24h") or an RFC 3339 time.
func parseSince(flagName, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, usagef("--%s %q: want a duration such as 24h or a time such as 2026-01-02T15:04:05Z", flagName, v)
	}
	return t, nil
}

func auditCommand() *command {
	return &command{
		name: "audit", args: "[--namespace NS] [--actor A] [--action X] [--since 24h] [--until TIME] [--limit N] [--before ID]", client: true,
		summary: "Show the audit log, newest first (global admins; namespace admins with --namespace).",
		examples: []string{
			"trove audit --since 24h",
			"trove audit --action login.failure --limit 20",
			"trove audit --namespace acme --actor user:alice",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var q client.AuditQuery
			var since, until string
			fs.StringVar(&q.Namespace, "namespace", "", "only events of this `namespace`")
			fs.StringVar(&q.Actor, "actor", "", "only events of this `actor` (user:NAME, token:ID, or the user name of a failed login)")
			fs.StringVar(&q.Action, "action", "", "only events of this `action`, e.g. login.failure, token.create, provider.publish")
			fs.StringVar(&since, "since", "", "only events since this `time` (RFC 3339) or duration ago (24h)")
			fs.StringVar(&until, "until", "", "only events before this `time` (RFC 3339) or duration ago")
			fs.IntVar(&q.Limit, "limit", 100, "show at most `n` events (up to 1000)")
			fs.Int64Var(&q.Before, "before", 0, "only events older than the event with this `id` (to page)")
			return func(ctx context.Context, args []string) error {
				now := time.Now()
				var err error
				if q.Since, err = parseSince("since", since, now); err != nil {
					return err
				}
				if q.Until, err = parseSince("until", until, now); err != nil {
					return err
				}
				if q.Limit < 1 || q.Limit > 1000 {
					return usagef("--limit must be from 1 to 1000, got %d", q.Limit)
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				events, err := c.ListAudit(ctx, q)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.AuditList{Events: nonNil(events)})
				}
				if len(events) == 0 {
					fmt.Fprintln(cl.stdout, "No events.")
					return nil
				}
				rows := make([]string, 0, len(events))
				for _, e := range events {
					rows = append(rows, row(strconv.FormatInt(e.ID, 10), when(e.Time), e.Action, e.Actor, e.SourceAddr, e.Namespace, e.Target, e.Details))
				}
				return table(cl.stdout, "ID\tTIME\tACTION\tACTOR\tSOURCE\tNAMESPACE\tTARGET\tDETAILS", rows)
			}
		},
	}
}
