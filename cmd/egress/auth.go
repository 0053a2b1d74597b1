package main

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"golang.org/x/oauth2"
	"google.golang.org/api/idtoken"

	"github.com/egress-proxies/egress/internal/client"
)

// httpClient is how the CLI proves who it is to the API at api: the
// token given; none for the local stack on a loopback address; or else an
// ID token for the API's URL from Application Default Credentials, as
// Cloud Run's invoker check wants it.
func httpClient(ctx context.Context, api, token string) (*http.Client, error) {
	u, err := client.ParseURL(api)
	if err != nil {
		return nil, usageError{err}
	}
	if token != "" {
		return oauth2.NewClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"})), nil
	}
	if loopback(u.Hostname()) {
		return http.DefaultClient, nil
	}
	audience := u.Scheme + "://" + u.Host
	hc, err := idtoken.NewClient(ctx, audience)
	if err != nil {
		// A person's own ADC (gcloud auth application-default login)
		// cannot mint ID tokens; gcloud can, for a person.
		return nil, fmt.Errorf("no ID token for %s from Application Default Credentials: %w; "+
			`pass --token "$(gcloud auth print-identity-token)" (or set EGRESS_TOKEN), or set GOOGLE_APPLICATION_CREDENTIALS to a service account's key`, audience, err)
	}
	return hc, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
