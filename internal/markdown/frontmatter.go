package markdown

import (
	"bytes"

	"gopkg.in/yaml.v3"
)

// maxFrontMatter bounds the front matter block FrontMatter looks for.
const maxFrontMatter = 64 << 10

// FrontMatter splits a leading YAML front matter block ("---\n...\n---\n", LF or CRLF)
// from src, as tfplugindocs writes it (page_title, subcategory, description), returning
// its fields and the rest. Scalar values are returned as written (a number or a boolean
// as its text); null, list and map values are left out. Without front matter it returns
// nil and src. Malformed front matter is treated as no front matter, so that nothing a
// user wrote disappears from the page: it returns nil and src when the block is not
// closed within its first 64 KiB, is not YAML, or is not a mapping. An empty block
// ("---\n---\n") gives an empty, non-nil map.
func FrontMatter(src []byte) (map[string]string, []byte) {
	var rest []byte
	switch {
	case bytes.HasPrefix(src, []byte("---\n")):
		rest = src[4:]
	case bytes.HasPrefix(src, []byte("---\r\n")):
		rest = src[5:]
	default:
		return nil, src
	}
	var block []byte
	found := false
	for off := 0; off < len(rest) && off <= maxFrontMatter; {
		end := bytes.IndexByte(rest[off:], '\n')
		next := len(rest)
		line := rest[off:]
		if end >= 0 {
			next = off + end + 1
			line = rest[off : off+end]
		}
		if string(bytes.TrimRight(line, " \t\r")) == "---" {
			block, rest, found = rest[:off], rest[next:], true
			break
		}
		off = next
	}
	if !found {
		return nil, src
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(block, &doc); err != nil {
		return nil, src
	}
	fields := map[string]string{}
	if len(doc.Content) == 0 {
		return fields, rest // empty block
	}
	m := doc.Content[0]
	if doc.Kind != yaml.DocumentNode || m.Kind != yaml.MappingNode {
		return nil, src
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			continue
		}
		fields[k.Value] = v.Value
	}
	return fields, rest
}
