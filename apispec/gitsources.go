package apispec

import "time"

// Routes of git sources: a module whose versions come from the semver
// tags of a Git repository (docs/modules.md#git-repositories-as-modules).
// Creating and removing one needs admin on the namespace, reading and
// syncing publish. The webhook route takes no token: the push webhook's
// signature (or GitLab's secret token) is the credential.
const (
	RouteGitSources    = "/api/v1/namespaces/{namespace}/git-sources"                             // GET list
	RouteGitSource     = "/api/v1/namespaces/{namespace}/modules/{name}/{system}/git-source"      // GET, POST create, DELETE
	RouteGitSourceSync = "/api/v1/namespaces/{namespace}/modules/{name}/{system}/git-source/sync" // POST: sync now
	RouteGitSourceHook = "/api/v1/git-hooks/{namespace}/{name}/{system}"                          // POST: a push webhook
)

// GitSource is a module's git source as the API shows it: never its
// credentials nor its webhook secret.
type GitSource struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	System    string `json:"system"`
	// URL is the repository: https://, http://, git://, ssh:// or
	// user@host:path.
	URL string `json:"url"`
	// Subdir is the module's directory in the repository ("" the root).
	Subdir string `json:"subdir"`
	// TagPrefix is what version tags start with before the version
	// ("" for v1.2.0 or 1.2.0; "network/" for network/v1.2.0).
	TagPrefix string `json:"tag_prefix"`
	// Auth is none, basic or ssh; Username the basic-auth user.
	Auth     string `json:"auth"`
	Username string `json:"username,omitempty"`
	// KnownHosts are the SSH server's known_hosts lines (auth ssh).
	KnownHosts string `json:"known_hosts,omitempty"`
	// PollIntervalSeconds: 0 the server's --git-poll-interval, -1 never
	// (webhooks and manual syncs only).
	PollIntervalSeconds int64     `json:"poll_interval_seconds"`
	CreatedAt           time.Time `json:"created_at"`
	CreatedBy           string    `json:"created_by"`
	// LastSyncAt is when the last sync ended (absent before the first);
	// LastError what went wrong ("" if nothing); NextSyncAt the next poll.
	LastSyncAt *time.Time `json:"last_sync_at,omitempty"`
	LastError  string     `json:"last_error"`
	NextSyncAt *time.Time `json:"next_sync_at,omitempty"`
	// WebhookURL is where the repository's push webhook posts.
	WebhookURL string `json:"webhook_url"`
}

// CreateGitSourceRequest is the body of POST RouteGitSource. Password
// (a token) and SSHPrivateKey are write-only: Trove keeps them
// encrypted and never returns them.
type CreateGitSourceRequest struct {
	URL                 string `json:"url"`
	Subdir              string `json:"subdir,omitempty"`
	TagPrefix           string `json:"tag_prefix,omitempty"`
	Auth                string `json:"auth,omitempty"` // none (default), basic, ssh
	Username            string `json:"username,omitempty"`
	Password            string `json:"password,omitempty"`
	SSHPrivateKey       string `json:"ssh_private_key,omitempty"`
	KnownHosts          string `json:"known_hosts,omitempty"`
	PollIntervalSeconds int64  `json:"poll_interval_seconds,omitempty"`
}

// CreatedGitSource answers POST RouteGitSource: the source and, this
// once, the secret its push webhook must be configured with.
type CreatedGitSource struct {
	GitSource
	WebhookSecret string `json:"webhook_secret"`
}

// GitSourceList is the answer of GET RouteGitSources.
type GitSourceList struct {
	GitSources []GitSource `json:"git_sources"`
}

// GitSourceSyncResult is the answer of POST RouteGitSourceSync.
type GitSourceSyncResult struct {
	// Published are the versions this sync published, oldest first.
	Published []string `json:"published"`
	// Current counts version tags published before; Ignored tags that
	// name no version.
	Current int `json:"current"`
	Ignored int `json:"ignored"`
	// Refused are the tags not published and why (a tag moved after its
	// version was published, an archive refused, ...).
	Refused []string `json:"refused"`
}
