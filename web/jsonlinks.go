package web

import (
	"encoding/json"
	"net/http"

	"github.com/google/uuid"
)

// attentionContext answers the whole context of an attention request of
// the project as JSON (a page shows a large one cut, linking here); 404
// for no such request or one without a context.
func (u *ui) attentionContext(r *req) error {
	id, err := uuid.Parse(r.Param("id"))
	if err != nil {
		return notFoundf("no such attention request")
	}
	q, err := u.Attention.Get(r.ctx(), r.project.ID, id)
	if err != nil {
		return err
	}
	return r.rawJSON(q.Context, "this request has no context")
}

// itemResult answers the whole result of an item of the project as JSON
// (its page shows a large one cut, linking here); 404 for no such item or
// one without a result.
func (u *ui) itemResult(r *req) error {
	it, err := r.itemParam()
	if err != nil {
		return err
	}
	return r.rawJSON(it.Result, "this item has no result")
}

// rawJSON answers 200 with the JSON value v as stored, or not found
// (saying missing) when there is none.
func (r *req) rawJSON(v json.RawMessage, missing string) error {
	if len(v) == 0 || string(v) == "null" {
		return notFoundf("%s", missing)
	}
	r.Response().Header().Set("Content-Type", "application/json")
	r.Response().WriteHeader(http.StatusOK)
	_, err := r.Response().Write(v)
	return err
}
