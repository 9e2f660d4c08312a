package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"trove.dev/trove/internal/registry"
)

// AddDownloads adds deltas to the stored counts in one transaction. The
// deltas are merged by key and written in key order, so that concurrent
// flushes of several processes lock the rows they share in the same order
// (PostgreSQL) and do not deadlock. A delta whose version (or platform)
// does not exist is dropped by the statement's EXISTS.
func (x *Index) AddDownloads(ctx context.Context, deltas []registry.DownloadCount) error {
	merged, err := mergeDownloads(deltas)
	if err != nil || len(merged) == 0 {
		return err
	}
	return x.write(ctx, fmt.Sprintf("adding %d download counts", len(merged)), func(ctx context.Context, t tx) error {
		totals := mergeTotals(merged)
		if err := x.addConsumers(ctx, t, merged); err != nil {
			return err
		}
		for _, d := range totals {
			var err error
			switch d.Kind {
			case registry.DownloadProvider:
				_, err = t.exec(ctx, `INSERT INTO provider_downloads (namespace, type, version, os, arch, downloads)
					SELECT $1, $2, $3, $4, $5, CAST($6 AS BIGINT)
					WHERE EXISTS (SELECT 1 FROM provider_versions v JOIN provider_platforms p ON p.version_id = v.id
						WHERE v.namespace = $1 AND v.type = $2 AND v.version = $3 AND p.os = $4 AND p.arch = $5)
					ON CONFLICT (namespace, type, version, os, arch)
					DO UPDATE SET downloads = provider_downloads.downloads + excluded.downloads`,
					d.Namespace, d.Name, d.Version, d.OS, d.Arch, d.Count)
			case registry.DownloadModule:
				_, err = t.exec(ctx, `INSERT INTO module_downloads (namespace, name, system, version, downloads)
					SELECT $1, $2, $3, $4, CAST($5 AS BIGINT)
					WHERE EXISTS (SELECT 1 FROM module_versions
						WHERE namespace = $1 AND name = $2 AND system = $3 AND version = $4)
					ON CONFLICT (namespace, name, system, version)
					DO UPDATE SET downloads = module_downloads.downloads + excluded.downloads`,
					d.Namespace, d.Name, d.System, d.Version, d.Count)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// mergeDownloads checks deltas and returns them summed by key, in key
// order.
func mergeDownloads(deltas []registry.DownloadCount) ([]registry.DownloadCount, error) {
	out := make([]registry.DownloadCount, 0, len(deltas))
	for _, d := range deltas {
		if d.Count <= 0 {
			return nil, registry.Errorf(registry.Invalid, "a download count delta must be positive, got %d", d.Count)
		}
		if d.Kind != registry.DownloadProvider && d.Kind != registry.DownloadModule {
			return nil, registry.Errorf(registry.Invalid, "unknown download kind %d", d.Kind)
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b registry.DownloadCount) int { return compareDownloadKeys(a.DownloadKey, b.DownloadKey) })
	n := 0
	for i, d := range out {
		if i > 0 && d.DownloadKey == out[n-1].DownloadKey {
			out[n-1].Count += d.Count
			continue
		}
		out[n] = d
		n++
	}
	return out[:n], nil
}

func compareDownloadKeys(a, b registry.DownloadKey) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name),
		strings.Compare(a.System, b.System), strings.Compare(a.Version, b.Version), strings.Compare(a.OS, b.OS),
		strings.Compare(a.Arch, b.Arch), strings.Compare(a.Day, b.Day), strings.Compare(a.Consumer, b.Consumer),
		strings.Compare(a.Client, b.Client), strings.Compare(a.ClientVersion, b.ClientVersion))
}

// mergeTotals returns merged (sorted by key) summed by total key, in key
// order: the deltas of the totals.
func mergeTotals(merged []registry.DownloadCount) []registry.DownloadCount {
	out := make([]registry.DownloadCount, 0, len(merged))
	for _, d := range merged {
		d.DownloadKey = d.Total()
		if n := len(out); n > 0 && out[n-1].DownloadKey == d.DownloadKey {
			out[n-1].Count += d.Count
			continue
		}
		out = append(out, d)
	}
	return out
}

// addConsumers adds the consumer records of the deltas that name a
// consumer and a day. Like the totals, a record of a version that does
// not exist is dropped.
func (x *Index) addConsumers(ctx context.Context, t tx, merged []registry.DownloadCount) error {
	labels := map[string]string{}
	for _, d := range merged {
		if d.Consumer == "" || d.Day == "" {
			continue
		}
		consumer, err := x.consumerLabel(ctx, t, labels, d.Consumer)
		if err != nil {
			return err
		}
		switch d.Kind {
		case registry.DownloadProvider:
			_, err = t.exec(ctx, `INSERT INTO provider_consumers (namespace, type, version, day, consumer, client, client_version, downloads)
				SELECT $1, $2, $3, $4, $5, $6, $7, CAST($8 AS BIGINT)
				WHERE EXISTS (SELECT 1 FROM provider_versions WHERE namespace = $1 AND type = $2 AND version = $3)
				ON CONFLICT (namespace, type, version, day, consumer, client, client_version)
				DO UPDATE SET downloads = provider_consumers.downloads + excluded.downloads`,
				d.Namespace, d.Name, d.Version, d.Day, consumer, d.Client, d.ClientVersion, d.Count)
		case registry.DownloadModule:
			_, err = t.exec(ctx, `INSERT INTO module_consumers (namespace, name, system, version, day, consumer, client, client_version, downloads)
				SELECT $1, $2, $3, $4, $5, $6, $7, $8, CAST($9 AS BIGINT)
				WHERE EXISTS (SELECT 1 FROM module_versions WHERE namespace = $1 AND name = $2 AND system = $3 AND version = $4)
				ON CONFLICT (namespace, name, system, version, day, consumer, client, client_version)
				DO UPDATE SET downloads = module_consumers.downloads + excluded.downloads`,
				d.Namespace, d.Name, d.System, d.Version, d.Day, consumer, d.Client, d.ClientVersion, d.Count)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// consumerLabel returns the label a consumer is recorded under: a token
// a keyless exchange issued ("token:<id>" with stored CI claims) is
// recorded as its pipeline (registry.CIConsumer). seen caches the labels
// of one flush.
func (x *Index) consumerLabel(ctx context.Context, t tx, seen map[string]string, consumer string) (string, error) {
	id, ok := strings.CutPrefix(consumer, "token:")
	if !ok {
		return consumer, nil
	}
	if label, ok := seen[consumer]; ok {
		return label, nil
	}
	label := consumer
	var claims string
	err := t.row(ctx, `SELECT claims FROM token_ci_claims WHERE token_id = $1`, id).Scan(&claims)
	switch {
	case err == nil:
		var c registry.CIClaims
		if json.Unmarshal([]byte(claims), &c) == nil {
			label = registry.CIConsumer(c)
		}
	case !errors.Is(err, sql.ErrNoRows):
		return "", err
	}
	seen[consumer] = label
	return label, nil
}

// ConsumerDownloads returns the consumer records of q.
func (x *Index) ConsumerDownloads(ctx context.Context, q registry.ConsumerQuery) ([]registry.ConsumerCount, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var (
		rows *sql.Rows
		err  error
		what string
	)
	switch q.Kind {
	case registry.DownloadProvider:
		what = fmt.Sprintf("provider %s/%s", q.Namespace, q.Name)
		rows, err = x.query(ctx, `SELECT version, day, consumer, client, client_version, downloads FROM provider_consumers
			WHERE namespace = $1 AND type = $2 AND day >= $3 AND downloads > 0`, q.Namespace, q.Name, q.Since)
	case registry.DownloadModule:
		what = fmt.Sprintf("module %s/%s/%s", q.Namespace, q.Name, q.System)
		rows, err = x.query(ctx, `SELECT version, day, consumer, client, client_version, downloads FROM module_consumers
			WHERE namespace = $1 AND name = $2 AND system = $3 AND day >= $4 AND downloads > 0`, q.Namespace, q.Name, q.System, q.Since)
	default:
		return nil, registry.Errorf(registry.Invalid, "unknown download kind %d", q.Kind)
	}
	out, err := collect(rows, err, func(s scanner) (registry.ConsumerCount, error) {
		var c registry.ConsumerCount
		return c, s.Scan(&c.Version, &c.Day, &c.Consumer, &c.Client, &c.ClientVersion, &c.Count)
	})
	return out, x.fail(err, "reading the consumers of "+what)
}

// PruneConsumerDownloads removes the consumer records of the days before
// before.
func (x *Index) PruneConsumerDownloads(ctx context.Context, before string) (int64, error) {
	var n int64
	err := x.write(ctx, "pruning consumer records before "+before, func(ctx context.Context, t tx) error {
		for _, table := range []string{"provider_consumers", "module_consumers"} {
			res, err := t.exec(ctx, `DELETE FROM `+table+` WHERE day < $1`, before)
			if err != nil {
				return err
			}
			m, _ := res.RowsAffected()
			n += m
		}
		return nil
	})
	return n, err
}

// ProviderDownloads returns the counts of a provider's versions and
// platforms.
func (x *Index) ProviderDownloads(ctx context.Context, namespace, typ string) ([]registry.DownloadCount, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT version, os, arch, downloads FROM provider_downloads
		WHERE namespace = $1 AND type = $2 AND downloads > 0`, namespace, typ)
	out, err := collect(rows, err, func(s scanner) (registry.DownloadCount, error) {
		c := registry.DownloadCount{DownloadKey: registry.DownloadKey{Kind: registry.DownloadProvider, Namespace: namespace, Name: typ}}
		return c, s.Scan(&c.Version, &c.OS, &c.Arch, &c.Count)
	})
	return out, x.fail(err, fmt.Sprintf("reading the download counts of provider %s/%s", namespace, typ))
}

// ModuleDownloads returns the counts of a module's versions.
func (x *Index) ModuleDownloads(ctx context.Context, namespace, name, system string) ([]registry.DownloadCount, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT version, downloads FROM module_downloads
		WHERE namespace = $1 AND name = $2 AND system = $3 AND downloads > 0`, namespace, name, system)
	out, err := collect(rows, err, func(s scanner) (registry.DownloadCount, error) {
		c := registry.DownloadCount{DownloadKey: registry.ModuleDownload(namespace, name, system, "")}
		return c, s.Scan(&c.Version, &c.Count)
	})
	return out, x.fail(err, fmt.Sprintf("reading the download counts of module %s/%s/%s", namespace, name, system))
}
