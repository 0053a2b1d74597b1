package aws

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"golang.org/x/oauth2"
)

// Federation is how the functions get AWS credentials with no AWS key
// anywhere: their Google service account's ID token, for Audience, is
// exchanged with STS AssumeRoleWithWebIdentity for short-lived
// credentials of RoleARN, a role whose trust policy trusts
// accounts.google.com with that audience and the functions' accounts'
// unique ids as subjects (deploy/terraform/aws).
type Federation struct {
	// RoleARN is the role to assume (AWS_ROLE_ARN).
	RoleARN string
	// SessionName names the role session in CloudTrail: the deployment
	// and the function.
	SessionName string
	// Tokens gives Google-signed ID tokens for the audience
	// (idtoken.NewTokenSource: on Cloud Run, from the metadata server).
	Tokens oauth2.TokenSource
	// Region is STS's region (its regional endpoint); Endpoint replaces
	// STS's endpoint (a fake in tests); HTTPClient is nil for the SDK's.
	Region, Endpoint string
	HTTPClient       *http.Client
}

// SessionDuration is how long the role's credentials last: STS's
// shortest but one (15 minutes is its least); the cache renews them
// before they expire.
const SessionDuration = time.Hour

// WebIdentity returns the credentials of f's role, renewed by a cache
// before they expire. STS's AssumeRoleWithWebIdentity is unsigned: the
// ID token is the proof, and no AWS key signs anything until STS
// answers.
func WebIdentity(f Federation) (sdk.CredentialsProvider, error) {
	switch {
	case f.RoleARN == "":
		return nil, errors.New("aws federation: no role ARN (AWS_ROLE_ARN)")
	case f.Tokens == nil:
		return nil, errors.New("aws federation: no source of Google ID tokens")
	case f.Region == "":
		return nil, errors.New("aws federation: no STS region")
	}
	o := sts.Options{Region: f.Region, AppID: "egress-proxies"}
	if f.Endpoint != "" {
		o.BaseEndpoint = sdk.String(f.Endpoint)
	}
	if f.HTTPClient != nil {
		o.HTTPClient = f.HTTPClient
	}
	roles := stscreds.NewWebIdentityRoleProvider(sts.New(o), f.RoleARN, idTokens{f.Tokens}, func(o *stscreds.WebIdentityRoleOptions) {
		o.RoleSessionName = f.SessionName
		o.Duration = SessionDuration
	})
	return sdk.NewCredentialsCache(roles), nil
}

// idTokens hands STS the ID token of a Google token source (idtoken's
// put it where an access token would be).
type idTokens struct{ ts oauth2.TokenSource }

func (t idTokens) GetIdentityToken() ([]byte, error) {
	tok, err := t.ts.Token()
	if err != nil {
		return nil, fmt.Errorf("a Google ID token for AWS: %w", err)
	}
	if tok.AccessToken == "" {
		return nil, errors.New("a Google ID token for AWS: the token source gave an empty token")
	}
	return []byte(tok.AccessToken), nil
}
