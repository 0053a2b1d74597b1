package tenancy

import (
	"context"
	"fmt"
)

// Lister lists namespaces a page at a time: a member's, or every one
// (member ""). *store.Store and *storefake.Store satisfy it.
type Lister interface {
	ListNamespaces(ctx context.Context, member string, pageSize int, pageToken string) ([]*Namespace, string, error)
}

// listPage is how many namespaces one page of All reads.
const listPage = 300

// All lists every namespace. The collector's tick reads them once and
// hands them to each of its looks at the budgets (budgetalert,
// budgetstop), rather than each look paying for its own listing.
func All(ctx context.Context, l Lister) ([]*Namespace, error) {
	var out []*Namespace
	for token := ""; ; {
		page, next, err := l.ListNamespaces(ctx, "", listPage, token)
		if err != nil {
			return nil, fmt.Errorf("listing the namespaces: %w", err)
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		token = next
	}
}
