package registry

import (
	"strings"
	"time"
)

// Consumers: who downloaded which version, with which client, by day.
// The download path records them with the download counts
// (DownloadKey's Consumer, Client, ClientVersion and Day); the index keeps
// them for a bounded number of days (DefaultConsumerRetentionDays).

// DefaultConsumerRetentionDays is how many days of consumer records the
// index keeps by default (--consumer-retention).
const DefaultConsumerRetentionDays = 90

// MaxConsumerDays is the longest window a consumer query may ask for.
const MaxConsumerDays = 366

// Consumer labels of the downloads no token made, and of clients Trove
// does not recognise.
const (
	AnonymousConsumer = "anonymous"
	ClientTerraform   = "terraform"
	ClientOpenTofu    = "opentofu"
	ClientOther       = "other"
)

// dayLayout is how a Day is written: the UTC date, which sorts as text.
const dayLayout = "2006-01-02"

// DayOf returns the UTC day of t as a DownloadKey's Day.
func DayOf(t time.Time) string { return t.UTC().Format(dayLayout) }

// ParseDay parses a Day.
func ParseDay(s string) (time.Time, error) {
	t, err := time.Parse(dayLayout, s)
	if err != nil {
		return time.Time{}, Errorf(Invalid, "day %q is not a date of the form YYYY-MM-DD", s)
	}
	return t, nil
}

// maxClientVersion bounds the client version kept from a User-Agent.
const maxClientVersion = 32

// ParseClient names the client of a request from its User-Agent:
// "Terraform/1.9.5 (+https://...)" is terraform 1.9.5, "OpenTofu/1.12.6"
// is opentofu 1.12.6; any other agent is ClientOther with no version. A
// version that is not a plain version string (digits, letters, dots and
// dashes, at most 32 bytes) is dropped, so that the record holds no free
// text from the request.
func ParseClient(userAgent string) (client, version string) {
	product, _, _ := strings.Cut(userAgent, " ")
	name, ver, _ := strings.Cut(product, "/")
	switch {
	case strings.EqualFold(name, "Terraform"):
		client = ClientTerraform
	case strings.EqualFold(name, "OpenTofu"):
		client = ClientOpenTofu
	default:
		return ClientOther, ""
	}
	if len(ver) == 0 || len(ver) > maxClientVersion {
		return client, ""
	}
	for _, c := range ver {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '-') {
			return client, ""
		}
	}
	return client, ver
}

// ConsumerCount is the number of downloads of one version by one
// consumer with one client on one day, as the index returns them.
type ConsumerCount struct {
	Version               string
	Day                   string
	Consumer              string
	Client, ClientVersion string
	Count                 int64
}

// ConsumerQuery selects the consumer records of a provider (Kind
// DownloadProvider, Name its type) or a module since a day.
type ConsumerQuery struct {
	Kind      DownloadKind
	Namespace string
	Name      string
	System    string
	// Since is the first day included (a Day).
	Since string
}

// CIConsumer is the consumer label of a token a keyless exchange
// issued: the pipeline that holds it, named by its CI claims.
func CIConsumer(c CIClaims) string {
	label := "ci:" + c.Repository
	if c.Repository == "" {
		label = "ci:" + c.Issuer
	}
	if c.Workflow != "" {
		label += " (" + c.Workflow + ")"
	}
	return label
}
