// Package downloads owns Trove's download counts on their way to the
// index: a Counter counts the downloads this process answers in memory
// (Add, on the request path, without a write), adds what it counted to
// the index's stored counts every flush interval (Flush, Run: deltas, so
// that several replicas sharing one index add up), and answers reads with
// the stored counts plus what it has not written yet (Pending), so that a
// client that just downloaded through this replica sees its download.
//
// What a crash loses: the counts of at most one flush interval of this
// process (those not flushed yet). A graceful stop flushes (Run's final
// flush, and internal/app flushes before it closes the index). A flush
// that fails keeps its deltas for the next one; a flush whose commit
// succeeded but was reported as failed (a connection lost at the commit)
// counts its deltas twice: counts are statistics, not a ledger.
//
// What counts as a download is decided by the protocol handlers that call
// Add: a successful providers.v1 download document (200) and a
// successful modules.v1 download (204). See docs/api.md.
//
// The same keys record consumers: a key that names who downloaded, with
// which client, on which day (registry.DownloadKey's Consumer, Client,
// ClientVersion, Day) counts toward its total and that day's consumer
// record in the same flush (docs/consumers.md). The keys of past days are
// retired at the first flush of a new day, so the keys held stay bounded
// by one day's distinct consumers; the index's records of days older than
// the retention are pruned once a day.
package downloads

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/reqtime"
	"trove.dev/trove/internal/store"
)

// Defaults of a Counter.
const (
	// DefaultInterval is how often Run flushes.
	DefaultInterval = 10 * time.Second
	// DefaultMaxKeys bounds the distinct keys a Counter holds (a few
	// hundred bytes each). Every key is a version (and platform) that
	// was downloaded, so the bound is only reached by a registry that
	// large; downloads of further keys are then not counted (and logged
	// at the next flush).
	DefaultMaxKeys = 200_000
	// finalFlushTimeout bounds the flush of Run's end and of Close.
	finalFlushTimeout = 10 * time.Second
)

// Options configure New.
type Options struct {
	// Store receives the deltas and answers the reads; required.
	Store store.Downloads
	// Interval is how often Run flushes (DefaultInterval if <= 0).
	Interval time.Duration
	// MaxKeys bounds the distinct keys held (DefaultMaxKeys if <= 0).
	MaxKeys int
	// Logger hears failed flushes; nil discards.
	Logger *slog.Logger
	// Metrics, if set, gets trove_downloads_total{kind}: the downloads
	// this process counted since it started (flushed or not).
	Metrics prometheus.Registerer
	// ConsumerRetention is how many days of consumer records the index
	// keeps (registry.DefaultConsumerRetentionDays if <= 0).
	ConsumerRetention int
	// Now tells the time (time.Now if nil).
	Now func() time.Time
	// Consumers makes AddRequest record consumers (who, with which
	// client, which day); false records only the counts.
	Consumers bool
}

// slot is the count of one key not flushed yet.
type slot struct{ n atomic.Int64 }

// Counter counts downloads in memory and flushes them to the index. It
// is safe for concurrent use. Add of a key counted before takes one
// lock-free map lookup and one atomic add, and does not allocate.
type Counter struct {
	store    store.Downloads
	interval time.Duration
	maxKeys  int
	log      *slog.Logger

	// read holds the slots of the keys seen before the last promotion;
	// it is never modified once stored (copy on write under mu).
	read atomic.Pointer[map[registry.DownloadKey]*slot]

	mu       sync.Mutex
	dirty    map[registry.DownloadKey]*slot // keys seen since the last promotion
	misses   int                            // Adds that took mu since the last promotion
	dropped  int64                          // Adds of keys beyond maxKeys since the last flush
	inflight []registry.DownloadCount       // taken by the flush in progress, not committed yet
	flushed  [3]int64                       // by registry.DownloadKind: committed since start
	// retired holds the slots of past days' keys taken out of read at
	// the last flush: an Add that loaded read before may still count
	// on one, so the next flush collects them once more.
	retired map[registry.DownloadKey]*slot
	// strs interns the strings of the keys held: the keys of one
	// provider's versions and platforms, or of one consumer, share
	// their namespace, name, platform, consumer, client and day
	// strings instead of holding a copy each. Emptied when a day's keys
	// are retired, so that it holds about the strings of the keys held.
	strs map[string]string

	flushMu   sync.Mutex // one flush at a time
	retention int        // days of consumer records kept
	prunedDay string     // the day of the last pruning of consumer records
	consumers bool       // AddRequest records consumers
	day       atomic.Pointer[cachedDay]
	// retirements counts the retirements of keys out of read, which
	// make the slots a Memo holds stale.
	retirements atomic.Uint64

	// clock is Options.Now's: set, it takes precedence over a request's time.
	clock reqtime.Clock
}

// cachedDay is the day AddRequest records, until the second end.
type cachedDay struct {
	day        string
	start, end int64 // Unix seconds: [start, end)
}

// New returns a Counter writing to o.Store.
func New(o Options) (*Counter, error) {
	if o.Store == nil {
		return nil, registry.Errorf(registry.Internal, "downloads: no store")
	}
	c := &Counter{store: o.Store, interval: o.Interval, maxKeys: o.MaxKeys, log: o.Logger,
		dirty: map[registry.DownloadKey]*slot{}, retention: o.ConsumerRetention, clock: reqtime.ClockFrom(o.Now)}
	if c.retention <= 0 {
		c.retention = registry.DefaultConsumerRetentionDays
	}
	c.consumers = o.Consumers
	if c.interval <= 0 {
		c.interval = DefaultInterval
	}
	if c.maxKeys <= 0 {
		c.maxKeys = DefaultMaxKeys
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.read.Store(&map[registry.DownloadKey]*slot{})
	if o.Metrics != nil {
		for _, k := range []registry.DownloadKind{registry.DownloadProvider, registry.DownloadModule} {
			err := o.Metrics.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name:        "trove_downloads_total",
				Help:        "Downloads this process counted (providers.v1 download documents, modules.v1 downloads), by kind.",
				ConstLabels: prometheus.Labels{"kind": k.String()},
			}, func() float64 { return float64(c.total(k)) }))
			if err != nil {
				return nil, registry.Wrap(registry.Internal, err, "registering the download metrics")
			}
		}
	}
	return c, nil
}

// Interval is how often Run flushes.
func (c *Counter) Interval() time.Duration { return c.interval }

// Add counts one download of k (normalized names, as the index stores
// them). It never blocks on the index.
func (c *Counter) Add(k registry.DownloadKey) {
	if s := (*c.read.Load())[k]; s != nil {
		s.n.Add(1)
		return
	}
	c.addSlow(k)
}

// AddRequest counts one download of k answered to r, made by consumer
// (who asked, as the access guard found it: auth.Reader's Consumer, so
// that the request is not authenticated twice): with the consumer, their
// client (registry.ParseClient of the User-Agent) and today's UTC day
// when the Counter records consumers (Options.Consumers), as Add alone
// otherwise. It does not allocate for a key counted before.
func (c *Counter) AddRequest(r *http.Request, consumer string, k registry.DownloadKey) {
	c.AddRequestAt(r, consumer, k, c.clock.Now())
}

// AddRequestAt is AddRequest for a request that arrived at now
// (reqtime.Of: the server reads the clock once per request): its
// consumer record is that of now's UTC day, unless Options.Now was set
// (then Options.Now tells the day).
func (c *Counter) AddRequestAt(r *http.Request, consumer string, k registry.DownloadKey, now time.Time) {
	c.Add(c.requestKey(r, consumer, k, now))
}

// AddRequestMemo is AddRequestAt for a download of a cached document
// that keeps m (nil: none; see Memo).
func (c *Counter) AddRequestMemo(r *http.Request, consumer string, k registry.DownloadKey, now time.Time, m *Memo) {
	if m == nil {
		c.Add(c.requestKey(r, consumer, k, now))
		return
	}
	gen := c.retirements.Load() // before read: a memo made of an older read is older
	held := m.p.Load()
	var ua string
	if c.consumers {
		ua = userAgent(r)
		var client, clientVersion string
		if held != nil && held.uaKnown && held.ua == ua {
			// The User-Agent the memo's key was made from: the same
			// string parses to the same client.
			client, clientVersion = held.key.Client, held.key.ClientVersion
		} else {
			client, clientVersion = registry.ParseClient(ua)
		}
		k = c.consumerKey(k, consumer, client, clientVersion, now)
	}
	if held != nil && held.gen == gen && held.key == k {
		held.s.n.Add(1) // what Add does, without hashing k
		return
	}
	s := (*c.read.Load())[k]
	if s == nil {
		c.addSlow(k)
		return
	}
	s.n.Add(1)
	if held == nil || held.gen != gen {
		// The first key counted since the last retirement: remembered
		// with the counter's interned strings (never the request's
		// memory). A memo that holds another key still valid is kept,
		// so that downloads of one document by several consumers do
		// not allocate one per request.
		c.mu.Lock()
		ik := c.internKey(k)
		c.mu.Unlock()
		nm := &memo{gen: gen, key: ik, s: s}
		if c.consumers && len(ua) <= maxMemoUserAgent {
			nm.ua, nm.uaKnown = strings.Clone(ua), true
		}
		m.p.CompareAndSwap(held, nm)
	}
}

// maxMemoUserAgent bounds the User-Agent a Memo keeps (a copy, next to
// its key): the clients' are a few dozen bytes; a longer one is parsed
// on every download, as without a Memo, rather than kept.
const maxMemoUserAgent = 256

// Memo remembers, for one cached document (a providers.v1 download
// document keeps one, and so does each version of a cached modules.v1
// module), the counter slot of a download key counted through it, so
// that further downloads of the same key (the same document, consumer,
// client and day) are counted with a comparison of the key instead of a
// map lookup of it (which hashes its 11 strings), and with a comparison
// of the User-Agent the key's client was parsed from instead of parsing
// it again (registry.ParseClient).
// It holds the first key counted through it since a flush last retired
// keys (a past day's), and only until the next retirement: a slot is
// never counted on after it left the counter's keys, any more than by
// Add. It holds no map of the counter. The zero Memo is empty; it is
// safe for concurrent use.
type Memo struct{ p atomic.Pointer[memo] }

// Empty reports whether m holds no key (nothing was counted through it).
func (m *Memo) Empty() bool { return m.p.Load() == nil }

// memo is a key a Memo holds, its slot, and the retirement generation
// (Counter.retirements) in which the slot was found; with consumer
// records, also the User-Agent its key's client was parsed from
// (uaKnown: not one over maxMemoUserAgent), so that a download with the
// same User-Agent takes the client from key instead of parsing it again.
type memo struct {
	gen     uint64
	key     registry.DownloadKey
	s       *slot
	ua      string
	uaKnown bool
}

// requestKey returns k completed for a request: with consumer records,
// its consumer, client and day (see consumerKey).
func (c *Counter) requestKey(r *http.Request, consumer string, k registry.DownloadKey, now time.Time) registry.DownloadKey {
	if c.consumers {
		client, clientVersion := registry.ParseClient(userAgent(r))
		k = c.consumerKey(k, consumer, client, clientVersion, now)
	}
	return k
}

// consumerKey returns k with a consumer record's fields: consumer
// (registry.AnonymousConsumer if ""), the client parsed from the
// request's User-Agent, and the UTC day of now (or of Options.Now if
// set). Both ways of counting a request (requestKey, AddRequestMemo)
// make their keys here.
func (c *Counter) consumerKey(k registry.DownloadKey, consumer, client, clientVersion string, now time.Time) registry.DownloadKey {
	if consumer == "" {
		consumer = registry.AnonymousConsumer
	}
	k.Consumer = consumer
	k.Client, k.ClientVersion = client, clientVersion
	k.Day = c.dayOf(c.clock.At(now))
	return k
}

// userAgent is r.UserAgent() read from the header map as net/http's
// server stores it (canonical keys), without canonicalizing the name.
func userAgent(r *http.Request) string {
	if v := r.Header["User-Agent"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// dayOf returns the UTC day of now, formatted once per day.
func (c *Counter) dayOf(now time.Time) string {
	sec := now.Unix()
	if d := c.day.Load(); d != nil && sec >= d.start && sec < d.end {
		return d.day
	}
	t := now.UTC()
	start := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	d := &cachedDay{day: registry.DayOf(t), start: start.Unix(), end: start.AddDate(0, 0, 1).Unix()}
	c.day.Store(d)
	return d.day
}

// addSlow counts a download of a key that is not in read: it is kept in
// dirty, which is merged into read (promoted) once the misses outnumber
// the keys of read, so that the cost of copying read is amortized over
// the locked Adds it saves.
func (c *Counter) addSlow(k registry.DownloadKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	read := *c.read.Load()
	s := read[k]
	if s == nil {
		s = c.dirty[k]
	}
	if s == nil {
		if len(read)+len(c.dirty) >= c.maxKeys {
			c.dropped++
			return
		}
		s = &slot{}
		c.dirty[c.internKey(k)] = s // the map keeps the key: never the request's memory
	}
	s.n.Add(1)
	if c.misses++; c.misses > len(read) {
		c.promote()
	}
}

// promote merges dirty into a new read map. Callers hold mu.
func (c *Counter) promote() {
	c.misses = 0
	if len(c.dirty) == 0 {
		return
	}
	read := *c.read.Load()
	m := make(map[registry.DownloadKey]*slot, len(read)+len(c.dirty))
	maps.Copy(m, read)
	maps.Copy(m, c.dirty)
	c.read.Store(&m)
	c.dirty = map[registry.DownloadKey]*slot{}
}

// internKey returns k with its strings taken from (or copied into) the
// interned strings: never the request's memory, and one copy of each
// distinct string for all the keys held. Callers hold mu.
func (c *Counter) internKey(k registry.DownloadKey) registry.DownloadKey {
	if c.strs == nil {
		c.strs = map[string]string{}
	}
	for _, p := range []*string{&k.Namespace, &k.Name, &k.System, &k.Version, &k.OS, &k.Arch,
		&k.Consumer, &k.Client, &k.ClientVersion, &k.Day} {
		if *p == "" {
			continue
		}
		v, ok := c.strs[*p]
		if !ok {
			v = strings.Clone(*p)
			c.strs[v] = v
		}
		*p = v
	}
	return k
}

// retireLocked takes the keys of days before today out of read into
// retired, after collecting what the previously retired slots counted
// into sum. Callers hold mu and have promoted dirty into read.
func (c *Counter) retireLocked(today string, sum map[registry.DownloadKey]int64) {
	for k, s := range c.retired {
		if n := s.n.Swap(0); n > 0 {
			sum[k] += n
		}
	}
	c.retired = nil
	read := *c.read.Load()
	stale := 0
	for k := range read {
		if k.Day != "" && k.Day < today {
			stale++
		}
	}
	if stale == 0 {
		return
	}
	c.strs = nil // the keys kept hold their strings; new ones start a new table
	c.retired = make(map[registry.DownloadKey]*slot, stale)
	m := make(map[registry.DownloadKey]*slot, len(read)-stale)
	for k, s := range read {
		if k.Day != "" && k.Day < today {
			c.retired[k] = s
			continue
		}
		m[k] = s
	}
	c.read.Store(&m)
	c.retirements.Add(1) // after the store: Memos of the keys taken out are stale
}

// Flush adds the downloads counted since the last successful flush to the
// index in one AddDownloads call. On failure the deltas are kept (added
// back to their keys) for the next flush, and the error is returned.
// Flushes run one at a time; Adds go on meanwhile.
func (c *Counter) Flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	now := c.clock.Now()
	today := registry.DayOf(now)
	c.mu.Lock()
	c.promote()
	sum := map[registry.DownloadKey]int64{}
	c.retireLocked(today, sum)
	read := *c.read.Load()
	for k, s := range read {
		if n := s.n.Swap(0); n > 0 {
			sum[k] += n
		}
	}
	for k, s := range c.retired { // counted on before they were retired
		if n := s.n.Swap(0); n > 0 {
			sum[k] += n
		}
	}
	deltas := make([]registry.DownloadCount, 0, len(sum))
	for k, n := range sum {
		deltas = append(deltas, registry.DownloadCount{DownloadKey: k, Count: n})
	}
	c.inflight = deltas
	if c.dropped > 0 {
		c.log.Warn("downloads not counted: too many distinct versions and platforms", "dropped", c.dropped, "max_keys", c.maxKeys)
		c.dropped = 0
	}
	c.mu.Unlock()
	c.prune(ctx, now, today)
	if len(deltas) == 0 {
		return nil
	}

	err := c.store.AddDownloads(ctx, deltas)

	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight = nil
	if err != nil {
		c.putBackLocked(deltas)
		return err
	}
	for _, d := range deltas {
		c.flushed[d.Kind] += d.Count
	}
	return nil
}

// putBackLocked adds the deltas of a failed flush back to their slots, so
// that the next flush writes them. Callers hold mu.
func (c *Counter) putBackLocked(deltas []registry.DownloadCount) {
	read := *c.read.Load()
	for _, d := range deltas {
		s := read[d.DownloadKey]
		if s == nil {
			s = c.retired[d.DownloadKey]
		}
		if s == nil {
			s = c.dirty[d.DownloadKey]
		}
		if s == nil {
			if c.retired == nil {
				c.retired = map[registry.DownloadKey]*slot{}
			}
			s = &slot{}
			c.retired[d.DownloadKey] = s // collected by the next flush
		}
		s.n.Add(d.Count)
	}
}

// prune removes the index's consumer records older than the retention,
// at most once a day (every replica does; the deletes are idempotent).
// A failure is logged and tried again at the next flush.
func (c *Counter) prune(ctx context.Context, now time.Time, today string) {
	if c.prunedDay == today {
		return
	}
	before := registry.DayOf(now.AddDate(0, 0, -c.retention))
	n, err := c.store.PruneConsumerDownloads(ctx, before)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("pruning consumer records; trying again at the next flush", "err", err)
		}
		return
	}
	c.prunedDay = today
	if n > 0 {
		c.log.Info("pruned consumer records", "records", n, "before", before)
	}
}

// Run flushes every interval until ctx ends, then flushes once more
// (within a few seconds, ctx's values kept). A failed flush is logged
// and its deltas wait for the next one.
func (c *Counter) Run(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.FinalFlush(context.WithoutCancel(ctx))
			return
		case <-t.C:
			if err := c.Flush(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("writing download counts to the index; they are kept for the next flush", "err", err)
			}
		}
	}
}

// FinalFlush flushes within a few seconds and logs what a failure
// loses: for a process about to stop.
func (c *Counter) FinalFlush(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, finalFlushTimeout)
	defer cancel()
	if err := c.Flush(ctx); err != nil {
		c.log.Error("writing download counts to the index before stopping: they are lost", "err", err, "downloads", c.pendingTotal())
	}
}

// Pending returns the counts of the keys match accepts that this process
// counted and the index does not hold yet (those of a flush in progress
// included), summed by total key (registry.DownloadKey.Total), in no
// particular order.
func (c *Counter) Pending(match func(registry.DownloadKey) bool) []registry.DownloadCount {
	c.mu.Lock()
	sum := c.pendingLocked(match)
	c.mu.Unlock()
	totals := make(map[registry.DownloadKey]int64, len(sum))
	for k, n := range sum {
		totals[k.Total()] += n
	}
	out := make([]registry.DownloadCount, 0, len(totals))
	for k, n := range totals {
		out = append(out, registry.DownloadCount{DownloadKey: k, Count: n})
	}
	return out
}

// pendingLocked sums the pending counts of the keys match accepts.
// Callers hold mu, so that no flush moves counts between the slots, the
// flush in progress and the flushed totals meanwhile.
func (c *Counter) pendingLocked(match func(registry.DownloadKey) bool) map[registry.DownloadKey]int64 {
	sum := map[registry.DownloadKey]int64{}
	for _, m := range []map[registry.DownloadKey]*slot{*c.read.Load(), c.dirty, c.retired} {
		for k, s := range m {
			if n := s.n.Load(); n > 0 && match(k) {
				sum[k] += n
			}
		}
	}
	for _, d := range c.inflight {
		if match(d.DownloadKey) {
			sum[d.DownloadKey] += d.Count
		}
	}
	return sum
}

// pendingTotal is the number of downloads not flushed yet.
func (c *Counter) pendingTotal() int64 {
	return registry.DownloadTotal(c.Pending(func(registry.DownloadKey) bool { return true }))
}

// total is the number of downloads of kind this process counted since it
// started: flushed and pending, read under one lock. It never decreases
// (a count an Add makes while it runs is seen now or next time).
func (c *Counter) total(kind registry.DownloadKind) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.flushed[kind]
	for _, p := range c.pendingLocked(func(k registry.DownloadKey) bool { return k.Kind == kind }) {
		n += p
	}
	return n
}

// ProviderDownloads returns the counts of a provider's versions and
// platforms (normalized names): the index's plus this process's pending
// ones (store.Downloads.ProviderDownloads).
func (c *Counter) ProviderDownloads(ctx context.Context, namespace, typ string) ([]registry.DownloadCount, error) {
	stored, err := c.store.ProviderDownloads(ctx, namespace, typ)
	if err != nil {
		return nil, err
	}
	return merge(stored, c.Pending(func(k registry.DownloadKey) bool {
		return k.Kind == registry.DownloadProvider && k.Namespace == namespace && k.Name == typ
	})), nil
}

// ModuleDownloads returns the counts of a module's versions (normalized
// names): the index's plus this process's pending ones
// (store.Downloads.ModuleDownloads).
func (c *Counter) ModuleDownloads(ctx context.Context, namespace, name, system string) ([]registry.DownloadCount, error) {
	stored, err := c.store.ModuleDownloads(ctx, namespace, name, system)
	if err != nil {
		return nil, err
	}
	return merge(stored, c.Pending(func(k registry.DownloadKey) bool {
		return k.Kind == registry.DownloadModule && k.Namespace == namespace && k.Name == name && k.System == system
	})), nil
}

// ConsumerDownloads returns the consumer records of q: the index's plus
// this process's pending ones (store.Downloads.ConsumerDownloads). A
// pending record of a keyless token is named "token:<id>" until it is
// flushed (the index names it by its pipeline).
func (c *Counter) ConsumerDownloads(ctx context.Context, q registry.ConsumerQuery) ([]registry.ConsumerCount, error) {
	stored, err := c.store.ConsumerDownloads(ctx, q)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	pending := c.pendingLocked(func(k registry.DownloadKey) bool {
		return k.Consumer != "" && k.Day >= q.Since && k.Kind == q.Kind && k.Namespace == q.Namespace &&
			k.Name == q.Name && k.System == q.System
	})
	c.mu.Unlock()
	type recordKey struct{ version, day, consumer, client, clientVersion string }
	at := make(map[recordKey]int, len(stored))
	for i, s := range stored {
		at[recordKey{s.Version, s.Day, s.Consumer, s.Client, s.ClientVersion}] = i
	}
	for k, n := range pending {
		rk := recordKey{k.Version, k.Day, k.Consumer, k.Client, k.ClientVersion}
		if i, ok := at[rk]; ok {
			stored[i].Count += n
			continue
		}
		at[rk] = len(stored)
		stored = append(stored, registry.ConsumerCount{Version: k.Version, Day: k.Day, Consumer: k.Consumer,
			Client: k.Client, ClientVersion: k.ClientVersion, Count: n})
	}
	return stored, nil
}

// merge adds pending to stored, by key.
func merge(stored, pending []registry.DownloadCount) []registry.DownloadCount {
	if len(pending) == 0 {
		return stored
	}
	at := make(map[registry.DownloadKey]int, len(stored))
	for i, s := range stored {
		at[s.DownloadKey] = i
	}
	for _, p := range pending {
		if i, ok := at[p.DownloadKey]; ok {
			stored[i].Count += p.Count
		} else {
			stored = append(stored, p)
		}
	}
	return stored
}
