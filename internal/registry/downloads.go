package registry

// DownloadKind tells what a download count is of.
type DownloadKind uint8

// The kinds of downloads Trove counts.
const (
	// DownloadProvider is a provider package of one version and platform:
	// a successful providers.v1 download document.
	DownloadProvider DownloadKind = iota + 1
	// DownloadModule is a module version: a successful modules.v1 download.
	DownloadModule
)

// String names the kind as the metrics label it ("provider", "module").
func (k DownloadKind) String() string {
	switch k {
	case DownloadProvider:
		return "provider"
	case DownloadModule:
		return "module"
	}
	return "unknown"
}

// DownloadKey names what one download is counted against, by normalized
// names. A provider key has Name (the provider type), Version, OS and
// Arch, and System ""; a module key has Name, System and Version, and OS
// and Arch "".
//
// A key may also say who downloaded (Consumer, the client named by
// Client and ClientVersion, on the UTC Day): such a key counts toward the
// total of its Total key and toward the consumer record (ConsumerCount)
// of that day. Keys of the totals the index returns have them empty.
type DownloadKey struct {
	Kind      DownloadKind
	Namespace string
	Name      string
	System    string
	Version   string
	OS, Arch  string

	// Consumer names who downloaded (ConsumerLabel); "" for a key of a
	// total only.
	Consumer string
	// Client and ClientVersion name the client (ParseClient).
	Client, ClientVersion string
	// Day is the UTC day of the download, as DayOf writes it.
	Day string
}

// Total returns the key of the total k counts toward: k without who
// downloaded.
func (k DownloadKey) Total() DownloadKey {
	k.Consumer, k.Client, k.ClientVersion, k.Day = "", "", "", ""
	return k
}

// ProviderDownload is the key of a provider package download.
func ProviderDownload(namespace, typ, version, os, arch string) DownloadKey {
	return DownloadKey{Kind: DownloadProvider, Namespace: namespace, Name: typ, Version: version, OS: os, Arch: arch}
}

// ModuleDownload is the key of a module version download.
func ModuleDownload(namespace, name, system, version string) DownloadKey {
	return DownloadKey{Kind: DownloadModule, Namespace: namespace, Name: name, System: system, Version: version}
}

// DownloadCount is a number of downloads of one key: a total read from the
// index, or a delta added to it.
type DownloadCount struct {
	DownloadKey
	Count int64
}

// DownloadTotal sums counts.
func DownloadTotal(counts []DownloadCount) int64 {
	var n int64
	for _, c := range counts {
		n += c.Count
	}
	return n
}
