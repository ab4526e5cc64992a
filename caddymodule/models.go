package caddymodule

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/translate"
)

// provisionModels builds the translator's alias table and the list that
// GET …/models advertises: the aliases (sorted), their targets, then the
// extra models, each once.
func (h *Handler) provisionModels() {
	h.translator = translate.Config{DefaultEffort: h.DefaultEffort, Aliases: make(map[string]translate.Alias, len(h.ModelAliases))}
	seen := map[string]bool{}
	var models []string
	add := func(m string) {
		if m != "" && !seen[m] {
			seen[m] = true
			models = append(models, m)
		}
	}
	aliases := make([]string, 0, len(h.ModelAliases))
	for name := range h.ModelAliases {
		aliases = append(aliases, name)
	}
	sort.Strings(aliases)
	for _, name := range aliases {
		a := h.ModelAliases[name]
		h.translator.Aliases[name] = translate.Alias{
			Model: a.Model, Effort: a.Effort, Summary: a.Summary,
			Verbosity: a.Verbosity, NoReasoning: a.NoReasoning,
		}
		add(name)
	}
	for _, name := range aliases {
		add(h.ModelAliases[name].Model)
	}
	for _, m := range h.Models {
		add(m)
	}
	h.models = models
}

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
