package web

import (
	"html"
	"html/template"
)

// markdownDoc is rendered Markdown.
type markdownDoc struct {
	HTML      template.HTML
	Truncated bool
}

// renderMarkdown renders Markdown as safe HTML; link rewrites relative
// link destinations ("" drops the link).
func renderMarkdown(src []byte, link func(string) string) markdownDoc {
	if len(src) == 0 {
		return markdownDoc{}
	}
	return markdownDoc{HTML: template.HTML("<pre>" + html.EscapeString(string(src)) + "</pre>")}
}
