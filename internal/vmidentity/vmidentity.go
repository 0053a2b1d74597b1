// Package vmidentity tells which VM sent a call-home, from something the
// VM cannot forge: the identity token Google's metadata server signs for
// it (instance/service-accounts/default/identity?audience=AUD&format=full),
// whose claims name the instance, its zone and project, and the service
// account it runs as.
//
// Pub/Sub does not tell a push subscriber who published a message, and a
// message's attributes and body are whatever the publisher wrote; root on
// one VM could name any proxy in them. The token is signed by Google with
// a key the VM never holds, so a message that carries one for audience
// AUD (the call-home topic) was sent by the instance it names, or by
// someone that instance gave its token to.
//
// Verifier checks a token against Google's published keys (through
// google.golang.org/api/idtoken); the local stack and the tests sign their
// VMs' tokens with an Issuer of their own and point the Verifier at its
// keys (Issuer.KeysClient), so the same checks run everywhere.
package vmidentity

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"
)

// Instance is a VM as its identity token names it.
type Instance struct {
	Project string
	Zone    string
	Name    string
	ID      string
	// Email is the service account the VM runs as.
	Email string
}

// ErrInvalid wraps every reason a token is refused.
var ErrInvalid = errors.New("not a valid identity token of a proxy VM")

// Verifier verifies the identity tokens of the VMs of one project that run
// as one service account, for one audience.
type Verifier struct {
	v        *idtoken.Validator
	audience string
	project  string
	email    string
}

// NewVerifier returns a Verifier of tokens for audience, from a VM of
// project running as email (any account when empty: the local stack's
// VMs run as none). opts reach the client that fetches Google's keys:
// KeysClient's, for tokens an Issuer signed.
func NewVerifier(ctx context.Context, audience, project, email string, opts ...option.ClientOption) (*Verifier, error) {
	v, err := idtoken.NewValidator(context.WithoutCancel(ctx), opts...)
	if err != nil {
		return nil, fmt.Errorf("identity token validator: %w", err)
	}
	return &Verifier{v: v, audience: audience, project: project, email: email}, nil
}

// Verify checks the token's signature, expiry, issuer and audience, that
// it names a Compute Engine instance of the project, running as the
// expected account, and returns that instance. Every refusal wraps
// ErrInvalid and says why, never with the token.
func (v *Verifier) Verify(ctx context.Context, token string) (Instance, error) {
	if token == "" {
		return Instance{}, fmt.Errorf("%w: the message carries none", ErrInvalid)
	}
	p, err := v.v.Validate(ctx, token, v.audience)
	if err != nil {
		return Instance{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if p.Issuer != "https://accounts.google.com" && p.Issuer != "accounts.google.com" {
		return Instance{}, fmt.Errorf("%w: issuer %q is not Google's", ErrInvalid, p.Issuer)
	}
	str := func(m map[string]any, k string) string {
		switch x := m[k].(type) {
		case string:
			return x
		case float64:
			return fmt.Sprintf("%.0f", x)
		}
		return ""
	}
	google, _ := p.Claims["google"].(map[string]any)
	ce, _ := google["compute_engine"].(map[string]any)
	in := Instance{Project: str(ce, "project_id"), Zone: str(ce, "zone"), Name: str(ce, "instance_name"), ID: str(ce, "instance_id"), Email: str(p.Claims, "email")}
	switch {
	case ce == nil || in.Name == "":
		return Instance{}, fmt.Errorf("%w: it names no Compute Engine instance (a token of format=full has google.compute_engine)", ErrInvalid)
	case in.Project != v.project:
		return Instance{}, fmt.Errorf("%w: instance %s is of project %q, not %q", ErrInvalid, in.Name, in.Project, v.project)
	case v.email != "" && !strings.EqualFold(in.Email, v.email):
		return Instance{}, fmt.Errorf("%w: instance %s runs as %q, not the proxy VMs' account %s", ErrInvalid, in.Name, in.Email, v.email)
	}
	return in, nil
}

// Audience is the audience of a call-home's token: the call-home topic's
// full name, which the VM reads from its metadata.
func Audience(project, topic string) string { return "projects/" + project + "/topics/" + topic }
