package caddymodule

import (
	"encoding/json"
	"net/http"
)

// serveModels answers GET …/models with the configured aliases and models
// in OpenAI's list shape, so that clients can offer them.
func (rq *request) serveModels() {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: make([]model, 0, len(rq.h.models))}
	for _, m := range rq.h.models {
		list.Data = append(list.Data, model{ID: m, Object: "model", OwnedBy: "reasoning-relay"})
	}
	body, _ := json.Marshal(list)
	rq.w.Header().Set("Content-Type", "application/json")
	rq.w.WriteHeader(http.StatusOK)
	if rq.r.Method != http.MethodHead {
		_, _ = rq.w.Write(body)
	}
	rq.log("ok", http.StatusOK)
}
