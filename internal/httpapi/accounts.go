package httpapi

import (
	"errors"
	"net/http"

	"github.com/egress-proxies/egress/internal/account"
	"github.com/egress-proxies/egress/internal/proxy"
	"github.com/egress-proxies/egress/internal/tenancy"
)

// The cloud accounts (package account, docs/operations/accounts.md):
// platform admins read and write them, as they do the warm pools.

// accountBody is an account as a PUT gives it: the document's fields,
// without its id (the path's) and times (the store's).
type accountBody struct {
	Provider string            `json:"provider"`
	Settings map[string]string `json:"settings"`
	Regions  []string          `json:"regions"`
	Limits   account.Limits    `json:"limits"`
	State    account.State     `json:"state"`
}

// accountsPage is the body of a list of accounts.
type accountsPage struct {
	Accounts []account.Account `json:"accounts"`
}

// accountID is the account a request's path names, after the caller is
// found an admin.
func accountID(x *exchange, perm tenancy.Permission) (string, *apiError) {
	if !x.caller.admin {
		return "", adminRequired(perm)
	}
	id := x.r.PathValue("account")
	if fe := proxy.ValidateName("account", id); fe != nil {
		return id, invalid(*fe)
	}
	return id, nil
}

// perAccount is the variables an account of typ may set, and whether typ
// is enabled.
func (a *API) perAccount(typ string) ([]string, bool) {
	if a.opts.Providers == nil || !a.opts.Providers.Has(typ) {
		return nil, false
	}
	return a.opts.AccountVars[typ], true
}

// putAccount creates or replaces an account, held to account.Validate:
// a 400 names each field and its rule. The state left out is active.
func (a *API) putAccount(x *exchange) {
	id, e := accountID(x, tenancy.PutAccount)
	var body accountBody
	if e == nil {
		e = decodeBody(x.w, x.r, &body)
	}
	if e != nil {
		x.fail(e)
		return
	}
	acct := account.Account{ID: id, Provider: body.Provider, Settings: body.Settings, Regions: body.Regions, Limits: body.Limits, State: body.State}
	if acct.State == "" {
		acct.State = account.Active
	}
	if err := account.Validate(acct, a.perAccount); err != nil {
		var inv *account.InvalidError
		if !errors.As(err, &inv) {
			x.fail(a.storeError(x.ctx, err))
			return
		}
		var fe []proxy.FieldError
		for _, v := range inv.Violations {
			fe = append(fe, proxy.FieldError{Field: v.Field, Reason: ReasonAccountInvalid, Description: v.Description})
		}
		x.fail(invalid(fe...))
		return
	}
	_, err := a.store.GetAccount(x.ctx, id)
	existed := err == nil
	out, err := a.store.PutAccount(x.ctx, acct, a.now())
	switch {
	case err != nil:
		x.fail(a.storeError(x.ctx, err))
	case existed:
		x.reply(http.StatusOK, out)
	default:
		x.w.Header().Set("Location", "/v1/"+account.Collection+"/"+id)
		x.reply(http.StatusCreated, out)
	}
}

func (a *API) getAccount(x *exchange) {
	id, e := accountID(x, tenancy.GetAccount)
	if e != nil {
		x.fail(e)
		return
	}
	out, err := a.store.GetAccount(x.ctx, id)
	switch {
	case errors.Is(err, proxy.ErrNotFound):
		e := newError(http.StatusNotFound, ReasonAccountNotFound, "account %s not found", id)
		e.metadata = map[string]string{"account": id}
		x.fail(e)
	case err != nil:
		x.fail(a.storeError(x.ctx, err))
	default:
		x.reply(http.StatusOK, out)
	}
}

// deleteAccount deletes an account's document, idempotently (204). The
// proxies in it are not looked at: an admin drains it first
// (docs/operations/accounts.md); the collector reports the accounts
// documents still name.
func (a *API) deleteAccount(x *exchange) {
	id, e := accountID(x, tenancy.DeleteAccount)
	if e != nil {
		x.fail(e)
		return
	}
	if err := a.store.DeleteAccount(x.ctx, id); err != nil {
		x.fail(a.storeError(x.ctx, err))
		return
	}
	x.w.WriteHeader(http.StatusNoContent)
}

// listAccounts lists every account, ordered by id: a deployment holds a
// few, never a page's worth.
func (a *API) listAccounts(x *exchange) {
	if !x.caller.admin {
		x.fail(adminRequired(tenancy.ListAccounts))
		return
	}
	list, err := a.store.ListAccounts(x.ctx)
	if err != nil {
		x.fail(a.storeError(x.ctx, err))
		return
	}
	if list == nil {
		list = []account.Account{}
	}
	x.reply(http.StatusOK, accountsPage{Accounts: list})
}
