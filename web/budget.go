package web

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/workgraph-dev/workgraph/clock"
	"github.com/workgraph-dev/workgraph/lease"
	"github.com/workgraph-dev/workgraph/wgerr"
)

// BudgetForm sets the budget of an item's subtree: on the item page, and
// in the inbox under a budget_exhausted request, where raising the budget
// is the answer (an answer in words would leave the subtree stopped).
type BudgetForm struct {
	Project string
	Item    uuid.UUID
	// Budget is the item's budget (nil: none yet); its limits fill the
	// fields.
	Budget *lease.Budget
	// Typed, after a refused submit of this form, is what the person had
	// typed: it fills the fields instead, so that the refusal loses
	// nothing.
	Typed *budgetTyped
}

// budgetTyped is what was typed into an item's budget form, as sent.
type budgetTyped struct {
	Item                      uuid.UUID
	Tokens, Cost, Wall, Depth string
}

// budgetTypedCookie carries a refused budget form's fields back to the
// page the form came from (once, as the flash message that says why).
const budgetTypedCookie = "wg_budget_typed"

// budgetFieldMax bounds each field the cookie carries back (the four stay
// well under a browser's 4 KB cookie).
const budgetFieldMax = 200

// keepBudgetTyped sets the one-time cookie with the budget form's fields
// for item, as the refused request sent them.
func (r *req) keepBudgetTyped(item uuid.UUID) {
	v := url.Values{"item": {item.String()}}
	for _, name := range []string{"max_tokens", "max_cost_usd", "max_wall", "max_depth"} {
		f, _ := cutText(r.FormValue(name), budgetFieldMax)
		v.Set(name, f)
	}
	http.SetCookie(r.Response(), &http.Cookie{
		Name: budgetTypedCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(v.Encode())),
		Path: "/", HttpOnly: true, Secure: secureRequest(r.Request()), SameSite: http.SameSiteLaxMode, MaxAge: 60,
	})
}

// takeBudgetTyped is what was typed into item's refused budget form, and
// clears it; nil when the cookie is for no form or another item's.
func (r *req) takeBudgetTyped(item uuid.UUID) *budgetTyped {
	c, err := r.Cookie(budgetTypedCookie)
	if err != nil {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return nil
	}
	v, err := url.ParseQuery(string(b))
	if err != nil || v.Get("item") != item.String() {
		return nil
	}
	http.SetCookie(r.Response(), &http.Cookie{Name: budgetTypedCookie, Path: "/", MaxAge: -1, HttpOnly: true})
	return &budgetTyped{Item: item, Tokens: v.Get("max_tokens"), Cost: v.Get("max_cost_usd"), Wall: v.Get("max_wall"), Depth: v.Get("max_depth")}
}

// Tokens, Cost, Wall and Depth are the current limits as the fields show
// them ("" for no limit).
func (f BudgetForm) Tokens() string {
	if f.Typed != nil {
		return f.Typed.Tokens
	}
	if f.Budget == nil || f.Budget.Limits.MaxTokens == nil {
		return ""
	}
	return strconv.FormatInt(*f.Budget.Limits.MaxTokens, 10)
}

func (f BudgetForm) Cost() string {
	if f.Typed != nil {
		return f.Typed.Cost
	}
	if f.Budget == nil || f.Budget.Limits.MaxCostUSD == nil {
		return ""
	}
	return strconv.FormatFloat(*f.Budget.Limits.MaxCostUSD, 'f', -1, 64)
}

func (f BudgetForm) Wall() string {
	if f.Typed != nil {
		return f.Typed.Wall
	}
	if f.Budget == nil || f.Budget.Limits.MaxWall == nil {
		return ""
	}
	return clock.Typed(*f.Budget.Limits.MaxWall)
}

func (f BudgetForm) Depth() string {
	if f.Typed != nil {
		return f.Typed.Depth
	}
	if f.Budget == nil || f.Budget.Limits.MaxDepth == nil {
		return ""
	}
	return strconv.Itoa(*f.Budget.Limits.MaxDepth)
}

// budgetForm is the form for item in r's project.
func (r *req) budgetForm(item uuid.UUID, b *lease.Budget) *BudgetForm {
	return &BudgetForm{Project: r.project.Name, Item: item, Budget: b, Typed: r.takeBudgetTyped(item)}
}

// setBudget sets the item's budget from the form: a limit left empty is
// no limit. Raising a spent budget closes its budget_exhausted request and
// the subtree's work continues; the message says which happened.
func (u *ui) setBudget(r *req) error {
	item, err := r.itemParam()
	if err != nil {
		return err
	}
	back := r.returnURL(r.projectURL("/items/" + item.ID.String()))
	lim, err := readBudgetForm(r)
	if err != nil {
		r.setFlash(err.Error(), true)
		r.keepBudgetTyped(item.ID)
		return r.Redirect(http.StatusSeeOther, back)
	}
	var before *lease.Budget
	if b, err := u.Leases.Budget(r.ctx(), r.project.ID, item.ID); err == nil {
		before = &b
	}
	b, err := u.Leases.SetBudget(r.ctx(), r.project.ID, item.ID, lim, r.by())
	if wgerr.CodeOf(err) == wgerr.CodeInvalid {
		r.setFlash("Budget not changed: "+err.Error(), true)
		r.keepBudgetTyped(item.ID)
		return r.Redirect(http.StatusSeeOther, back)
	}
	if err != nil {
		return err
	}
	var msg string
	switch {
	case b.Spent:
		msg = fmt.Sprintf("Budget set, but it is still spent (%d tokens, $%s used): nothing under %q is handed out until a limit is above what was used.",
			b.Used.Tokens(), strconv.FormatFloat(b.Used.CostUSD, 'f', -1, 64), item.Title)
		r.setFlash(msg, true)
		return r.Redirect(http.StatusSeeOther, back)
	case before != nil && before.Spent:
		msg = fmt.Sprintf("Budget raised: its request is closed and the work under %q continues.", item.Title)
	default:
		msg = fmt.Sprintf("Budget set for %q and everything under it.", item.Title)
	}
	return r.redirect(back, msg)
}

// digitGroups is a number written with its thousands grouped by ",", "_"
// or " " (2,000,000 or 1 000.50), a leading "$" allowed.
var digitGroups = regexp.MustCompile(`^\$?[0-9]{1,3}([,_ ][0-9]{3})+(\.[0-9]*)?$`)

// ungrouped is s without its thousands separators when it groups its
// digits as digitGroups says, else s as typed: "2,50" (a decimal comma)
// stays as it is, for the parser to refuse, rather than become 250.
func ungrouped(s string) string {
	if !digitGroups.MatchString(s) {
		return s
	}
	return strings.NewReplacer(",", "", "_", "", " ", "").Replace(s)
}

// readBudgetForm reads the limits; each error names its field as the form
// labels it.
func readBudgetForm(r *req) (lease.BudgetLimits, error) {
	var lim lease.BudgetLimits
	field := func(name string) string { return ungrouped(strings.TrimSpace(r.FormValue(name))) }
	if s := field("max_tokens"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return lim, fmt.Errorf("Budget not changed: tokens must be a whole number, e.g. 2000000 (got %q).", r.FormValue("max_tokens"))
		}
		lim.MaxTokens = &v
	}
	if s := strings.TrimPrefix(field("max_cost_usd"), "$"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 {
			return lim, fmt.Errorf("Budget not changed: cost must be an amount in dollars, e.g. 25 or 2.50 (got %q).", r.FormValue("max_cost_usd"))
		}
		lim.MaxCostUSD = &v
	}
	if s := strings.ReplaceAll(strings.TrimSpace(r.FormValue("max_wall")), " ", ""); s != "" { // "1h 30m"
		d, err := time.ParseDuration(s)
		if err != nil {
			return lim, fmt.Errorf("Budget not changed: wall time must be a duration, e.g. 4h, 90m or 1h30m (got %q).", r.FormValue("max_wall"))
		}
		lim.MaxWall = &d
	}
	if s := field("max_depth"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return lim, fmt.Errorf("Budget not changed: depth must be a whole number of levels, e.g. 2 (got %q).", r.FormValue("max_depth"))
		}
		lim.MaxDepth = &v
	}
	return lim, nil
}
