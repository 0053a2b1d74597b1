package azure

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	azcloud "github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"golang.org/x/oauth2"
)

// Audience is the audience of the Google ID token the functions present
// to Microsoft Entra ID: the one Entra expects of a federated credential's
// assertion, which deploy/terraform/azure's federated credentials name.
const Audience = "api://AzureADTokenExchange"

// Federation is how the functions get Azure tokens with no Azure secret
// anywhere: their Google service account's ID token, for Audience, is the
// client assertion of ClientID, an Entra application or user-assigned
// managed identity whose federated credential trusts issuer
// https://accounts.google.com, the functions' account's unique id as
// subject and Audience (deploy/terraform/azure makes both).
type Federation struct {
	// TenantID and ClientID are AZURE_TENANT_ID and AZURE_CLIENT_ID.
	TenantID, ClientID string
	// Tokens gives Google-signed ID tokens for Audience (on Cloud Run,
	// from the metadata server).
	Tokens oauth2.TokenSource
	// AuthorityHost replaces Entra ID's (a fake's token endpoint on this
	// machine, AZURE_AUTHORITY_HOST); "" is Azure's public cloud.
	AuthorityHost string
	// Transport, when not nil, replaces the HTTP client (tests).
	Transport policy.Transporter
}

// Credential is the federated credential of f: azidentity's
// ClientAssertionCredential, which asks Tokens for an ID token each time
// it needs an Azure token, and caches the Azure token until near its
// expiry.
func Credential(f Federation) (azcore.TokenCredential, error) {
	switch {
	case f.TenantID == "" || f.ClientID == "":
		return nil, errors.New("azure federation: the tenant and the client id are required (AZURE_TENANT_ID, AZURE_CLIENT_ID)")
	case f.Tokens == nil:
		return nil, errors.New("azure federation: no source of Google ID tokens")
	}
	opts := &azidentity.ClientAssertionCredentialOptions{}
	if f.Transport != nil {
		opts.Transport = f.Transport
	}
	if f.AuthorityHost != "" {
		opts.Cloud = azcloud.Configuration{ActiveDirectoryAuthorityHost: f.AuthorityHost, Services: map[azcloud.ServiceName]azcloud.ServiceConfiguration{}}
		// A fake on this machine is no Entra instance Microsoft's
		// discovery knows.
		opts.DisableInstanceDiscovery = true
	}
	tokens := f.Tokens
	return azidentity.NewClientAssertionCredential(f.TenantID, f.ClientID, func(context.Context) (string, error) {
		tok, err := tokens.Token()
		if err != nil {
			return "", fmt.Errorf("a Google ID token for Azure: %w", err)
		}
		if tok.AccessToken == "" {
			return "", errors.New("a Google ID token for Azure: the token source gave an empty token")
		}
		// idtoken's source puts the ID token where an access token would
		// be.
		return tok.AccessToken, nil
	}, opts)
}

// LocalToken is the token the provider sends to an AZURE_ENDPOINT (a
// fake) when no AZURE_AUTHORITY_HOST is set: no account's.
const LocalToken = "egress-local-azure-token"

// localCredential sends LocalToken.
type localCredential struct{}

func (localCredential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: LocalToken, ExpiresOn: time.Now().Add(time.Hour)}, nil
}
