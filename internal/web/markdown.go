package web

import (
	"html/template"
	"runtime"

	"trove.dev/trove/internal/markdown"
)

// markdownDoc is rendered, sanitized Markdown.
type markdownDoc struct {
	HTML      template.HTML
	Truncated bool
	Title     string
}

// renderSlots bounds the Markdown renders running at once: a worst-case
// document within markdown's limits costs up to a second and a few
// hundred MB, so a burst of cache misses must queue rather than take
// every CPU and all memory. Rendered pages are cached (pageCache).
var renderSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))

// renderMarkdown renders Markdown as safe HTML; link rewrites relative
// link and image destinations ("" drops the link, keeping its text).
// Its headings move one level down, under the page's own h1; scope keeps
// the ids of several documents of one page apart (markdown.Options.IDScope)
// and label names the document in its table regions' labels.
func renderMarkdown(src []byte, link func(string) string, scope, label string) markdownDoc {
	if len(src) == 0 {
		return markdownDoc{}
	}
	renderSlots <- struct{}{}
	defer func() { <-renderSlots }()
	doc := markdown.Render(src, markdown.Options{Link: link, HeadingOffset: 1, IDScope: scope, Label: label})
	return markdownDoc{HTML: doc.HTML, Truncated: doc.Truncated, Title: doc.Title}
}
