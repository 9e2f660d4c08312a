package publish

import (
	"io"

	"trove.dev/trove/internal/registry"
)

// signManaged signs SHA256SUMS with the namespace's registry-managed key,
// for a release that came without a signature: name and r (or nextErr,
// io.EOF) are what src yielded in the signature's place, and the source
// returned yields them again. Without a managed key the release is
// refused as one that lacks its signature. A Trove that cannot open the
// key (no or another key-encryption secret) refuses the publish: it
// never stores a version without a signature that verifies.
func (pub *publication) signManaged(src FileSource, name string, r io.Reader, nextErr error) (FileSource, error) {
	v := &pub.v
	sumsName, sigName := v.SHASumsFilename(), v.SHASumsSignatureFilename()
	unsigned := registry.Errorf(registry.Invalid,
		"the second file must be the signature %s (sign SHA256SUMS with: gpg --detach-sign %s); "+
			"or let Trove sign releases of namespace %s that come without one: trove key generate %s",
		sigName, sumsName, v.Namespace, v.Namespace)
	if pub.p.opt.Managed == nil {
		return nil, unsigned
	}
	key, sig, err := pub.p.opt.Managed.Sign(pub.ctx, v.Namespace, pub.sums)
	if registry.IsKind(err, registry.NotFound) {
		return nil, unsigned
	}
	if registry.IsKind(err, registry.Unavailable) {
		// The operator's problem (a missing or wrong secret file): the log
		// has the details, the publisher a message without server paths.
		pub.p.opt.Logger.ErrorContext(pub.ctx, "cannot sign with the namespace's managed key", "namespace", v.Namespace, "err", err)
		return nil, registry.Errorf(registry.Unavailable,
			"this Trove cannot sign with the managed key of namespace %s now: its signing secret is unavailable (the server log says why); try again later or ask the operator", v.Namespace)
	}
	if err != nil {
		return nil, err
	}
	pub.sig, v.SigningKey = sig, key
	if nextErr == io.EOF {
		return src, nil
	}
	return &pushedBack{src: src, name: name, r: r}, nil
}

// pushedBack yields one file already read from src, then src's own.
type pushedBack struct {
	src  FileSource
	name string
	r    io.Reader
	done bool
}

func (p *pushedBack) Next() (string, io.Reader, error) {
	if !p.done {
		p.done = true
		return p.name, p.r, nil
	}
	return p.src.Next()
}
