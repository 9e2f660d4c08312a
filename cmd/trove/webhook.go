package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// webhookEventsUsage is the usage of --events.
const webhookEventsUsage = "event `types` to send, comma-separated or repeated: provider.published, provider.deprecated, provider.undeprecated, " +
	"provider.revoked, provider.restored, provider.deleted, the module.* ones likewise, mirror.approved, mirror.unapproved, mirror.denied, mirror.undenied, " +
	"provider.*, module.*, mirror.* or * (default: every event)"

// webhookIDArg checks a webhook ID argument before any request.
func webhookIDArg(s string) error {
	if _, err := registry.ParseWebhookID(s); err != nil {
		return usagef("%s", registry.Message(err))
	}
	return nil
}

func webhookCreate() *command {
	return &command{
		name: "webhook create", args: "[NAMESPACE] --url URL [--events TYPES] [--secret-file FILE] [--inactive] [--description TEXT]",
		maxArgs: 1, client: true,
		summary: "Send the events of a namespace (or, without one, of every namespace: global admins only) to a URL, signed with a secret " +
			"that is printed once (needs admin on the namespace).",
		examples: []string{
			"trove webhook create acme --url https://ci.example.com/hooks/trove --events provider.published,module.published",
			"trove webhook create --url https://chat.example.com/hooks/registry --events 'provider.*'",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			target := fs.String("url", "", "the `URL` deliveries are posted to (https)")
			var events listFlag
			fs.Var(&events, "events", webhookEventsUsage)
			secretFile := fs.String("secret-file", "", "read the signing secret from `file` (16 to 128 printable characters) instead of generating one")
			inactive := fs.Bool("inactive", false, "create it inactive: no event is sent until it is activated")
			description, _ := textFlag(fs, "description", "free `text` describing the webhook", registry.DescriptionLimit)
			return func(ctx context.Context, args []string) error {
				if *target == "" {
					return usagef("--url is required")
				}
				req := apispec.CreateWebhookRequest{URL: *target, Events: events, Description: *description}
				if len(args) == 1 {
					req.Namespace = args[0]
				}
				if *inactive {
					active := false
					req.Active = &active
				}
				if *secretFile != "" {
					s, err := readSecretFile(*secretFile)
					if err != nil {
						return err
					}
					req.Secret = s
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				w, err := c.CreateWebhook(ctx, req)
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(w)
				}
				fmt.Fprintf(cl.stdout, "Created webhook %s of %s: %s to %s\n", w.ID, webhookScopeText(w.Namespace), webhookEventsText(w.Events), w.URL)
				if *secretFile == "" {
					fmt.Fprintf(cl.stdout, "Signing secret (shown once, keep it with the receiver): %s\n", w.Secret)
				}
				return nil
			}
		},
	}
}

// readSecretFile reads a webhook secret from a file, without surrounding
// white space.
func readSecretFile(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(raw))
	if err := registry.CheckWebhookSecret(s); err != nil {
		return "", usagef("%s: %s", path, registry.Message(err))
	}
	return s, nil
}

func webhookList() *command {
	return &command{
		name: "webhook list", args: "[NAMESPACE]", maxArgs: 1, client: true,
		summary:  "List the webhooks of a namespace (needs admin on it), or without one the global webhooks (global admins).",
		examples: []string{"trove webhook list acme", "trove webhook list", "trove webhook list acme --json"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				ns := ""
				if len(args) == 1 {
					ns = args[0]
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				ws, err := c.ListWebhooks(ctx, ns)
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.WebhookList{Webhooks: ws})
				}
				rows := make([]string, 0, len(ws))
				for _, w := range ws {
					rows = append(rows, row(w.ID, w.URL, webhookEventsText(w.Events), activeText(w), w.Description))
				}
				return table(cl.stdout, "ID\tURL\tEVENTS\tACTIVE\tDESCRIPTION", rows)
			}
		},
	}
}

func activeText(w apispec.Webhook) string {
	if w.Active {
		return "yes"
	}
	if w.DisabledReason != "" {
		return "no (" + w.DisabledReason + ")"
	}
	return "no"
}

func webhookScopeText(ns string) string {
	if ns == "" {
		return "every namespace"
	}
	return "namespace " + ns
}

func webhookEventsText(events []string) string {
	if len(events) == 0 {
		return "all events"
	}
	return strings.Join(events, ",")
}

func webhookShow() *command {
	return &command{
		name: "webhook show", args: "WEBHOOK_ID", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Show a webhook (its secret is never shown again).",
		examples: []string{"trove webhook show wh_0123456789abcdef"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				if err := webhookIDArg(args[0]); err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				w, err := c.GetWebhook(ctx, args[0])
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(w)
				}
				fmt.Fprintf(cl.stdout, "ID:          %s\nScope:       %s\nURL:         %s\nEvents:      %s\nActive:      %s\nDescription: %s\nCreated:     %s by %s\n",
					w.ID, webhookScopeText(w.Namespace), w.URL, webhookEventsText(w.Events), activeText(w), w.Description,
					w.CreatedAt.Format(time.RFC3339), w.CreatedBy)
				return nil
			}
		},
	}
}

func webhookUpdate() *command {
	return &command{
		name: "webhook update", args: "WEBHOOK_ID [--url URL] [--events TYPES] [--active=true|false] [--rotate-secret] [--description TEXT]",
		minArgs: 1, maxArgs: 1, client: true,
		summary: "Change a webhook; --rotate-secret prints a new secret once, --active=true reactivates one Trove deactivated.",
		examples: []string{
			"trove webhook update wh_0123456789abcdef --events '*'",
			"trove webhook update wh_0123456789abcdef --active=true",
			"trove webhook update wh_0123456789abcdef --rotate-secret",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			target := fs.String("url", "", "the new `URL`")
			var events listFlag
			fs.Var(&events, "events", webhookEventsUsage+"; '*' for every event")
			active := fs.String("active", "", "`true` to activate it, false to stop sending events")
			rotate := fs.Bool("rotate-secret", false, "generate a new signing secret and print it once")
			description, descSet := textFlag(fs, "description", "free `text` describing the webhook", registry.DescriptionLimit)
			return func(ctx context.Context, args []string) error {
				if err := webhookIDArg(args[0]); err != nil {
					return err
				}
				req := apispec.UpdateWebhookRequest{RotateSecret: *rotate}
				if *target != "" {
					req.URL = target
				}
				if len(events) > 0 {
					ev := []string(events)
					req.Events = &ev
				}
				if *active != "" {
					b, err := strconv.ParseBool(*active)
					if err != nil {
						return usagef("--active wants true or false, not %q", *active)
					}
					req.Active = &b
				}
				if *descSet {
					req.Description = description
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				w, err := c.UpdateWebhook(ctx, args[0], req)
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(w)
				}
				fmt.Fprintf(cl.stdout, "Updated webhook %s: %s to %s, active: %s\n", w.ID, webhookEventsText(w.Events), w.URL, activeText(w))
				if w.Secret != "" {
					fmt.Fprintf(cl.stdout, "New signing secret (shown once): %s\n", w.Secret)
				}
				return nil
			}
		},
	}
}

func webhookDelete() *command {
	return &command{
		name: "webhook delete", args: "WEBHOOK_ID", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Delete a webhook with its delivery log; pending deliveries are dropped.",
		examples: []string{"trove webhook delete wh_0123456789abcdef"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				if err := webhookIDArg(args[0]); err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.DeleteWebhook(ctx, args[0]); err != nil {
					return cl.explain(err)
				}
				fmt.Fprintf(cl.stdout, "Deleted webhook %s\n", args[0])
				return nil
			}
		},
	}
}

func webhookTest() *command {
	return &command{
		name: "webhook test", args: "WEBHOOK_ID", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Send a ping event to a webhook (even an inactive one); see its result with trove webhook deliveries.",
		examples: []string{"trove webhook test wh_0123456789abcdef"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				if err := webhookIDArg(args[0]); err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				d, err := c.TestWebhook(ctx, args[0])
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(d)
				}
				fmt.Fprintf(cl.stdout, "Queued ping delivery %s (event %s): trove webhook deliveries %s %s\n", d.ID, d.EventID, args[0], d.ID)
				return nil
			}
		},
	}
}

func webhookDeliveries() *command {
	return &command{
		name: "webhook deliveries", args: "WEBHOOK_ID [DELIVERY_ID] [--limit N]", minArgs: 1, maxArgs: 2, client: true,
		summary:  "List a webhook's newest deliveries, or show one delivery with every attempt and its payload.",
		examples: []string{"trove webhook deliveries wh_0123456789abcdef", "trove webhook deliveries wh_0123456789abcdef dl_0123456789abcdef"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			limit := fs.Int("limit", 50, "how many deliveries to list (1 to 200)")
			return func(ctx context.Context, args []string) error {
				if err := webhookIDArg(args[0]); err != nil {
					return err
				}
				if *limit < 1 || *limit > 200 {
					return usagef("--limit must be between 1 and 200, not %d", *limit)
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				if len(args) == 2 {
					if _, err := registry.ParseDeliveryID(args[1]); err != nil {
						return usagef("%s", registry.Message(err))
					}
					d, err := c.GetWebhookDelivery(ctx, args[0], args[1])
					if err != nil {
						return cl.explain(err)
					}
					if cl.jsonOut {
						return cl.printJSON(d)
					}
					fmt.Fprintf(cl.stdout, "Delivery %s of event %s (%s): %s after %d attempt(s)%s\n", d.ID, d.EventID, d.EventType, d.State, d.Attempts, nextText(d))
					rows := make([]string, 0, len(d.Log))
					for _, a := range d.Log {
						rows = append(rows, row(strconv.Itoa(a.N), a.At.Format(time.RFC3339), statusText(a.Status),
							(time.Duration(a.DurationMS)*time.Millisecond).String(), a.Error, registry.Elide(a.Response)))
					}
					return table(cl.stdout, "N\tAT\tSTATUS\tDURATION\tERROR\tRESPONSE", rows)
				}
				ds, err := c.ListWebhookDeliveries(ctx, args[0], *limit)
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.WebhookDeliveryList{Deliveries: ds})
				}
				rows := make([]string, 0, len(ds))
				for _, d := range ds {
					next := ""
					if d.NextAttempt != nil {
						next = d.NextAttempt.Format(time.RFC3339)
					}
					rows = append(rows, row(d.ID, d.EventType, d.EventID, d.State, strconv.Itoa(d.Attempts), d.CreatedAt.Format(time.RFC3339), next))
				}
				return table(cl.stdout, "DELIVERY\tTYPE\tEVENT\tSTATE\tATTEMPTS\tCREATED\tNEXT ATTEMPT", rows)
			}
		},
	}
}

func nextText(d apispec.WebhookDelivery) string {
	if d.NextAttempt == nil {
		return ""
	}
	return ", next attempt at " + d.NextAttempt.Format(time.RFC3339)
}

func statusText(status int) string {
	if status == 0 {
		return "-"
	}
	return strconv.Itoa(status)
}

func webhookRedeliver() *command {
	return &command{
		name: "webhook redeliver", args: "WEBHOOK_ID DELIVERY_ID", minArgs: 2, maxArgs: 2, client: true,
		summary:  "Send a delivery's event again, as a new delivery with the same event ID.",
		examples: []string{"trove webhook redeliver wh_0123456789abcdef dl_0123456789abcdef"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				if err := webhookIDArg(args[0]); err != nil {
					return err
				}
				if _, err := registry.ParseDeliveryID(args[1]); err != nil {
					return usagef("%s", registry.Message(err))
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				d, err := c.RedeliverWebhook(ctx, args[0], args[1])
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(d)
				}
				fmt.Fprintf(cl.stdout, "Queued delivery %s of event %s\n", d.ID, d.EventID)
				return nil
			}
		},
	}
}
