// The assessor's page: keyboard shortcuts and saving without a reload (the forms work without it).
// j / k: next / previous item; a grade's digit: relevance; Shift + digit: quality (tasks that judge it).
// Every save is one POST of JSON to the API; the page marks the item and moves to the next open one.
"use strict";
(function () {
  const config = JSON.parse(document.getElementById("config").dataset.config);
  const items = Array.from(document.querySelectorAll("article.item"));
  const progress = document.getElementById("progress");
  const message = document.getElementById("message");
  let current = Math.max(0, items.findIndex((a) => a.hasAttribute("data-first-open")));

  function focusItem(i) {
    if (i < 0 || i >= items.length) return;
    items[current].classList.remove("current");
    current = i;
    items[i].classList.add("current");
    items[i].focus();
    items[i].scrollIntoView({block: "start"});
  }

  function checked(article, name) {
    const input = article.querySelector(`input[name="${name}"]:checked`);
    return input ? Number(input.value) : null;
  }

  async function save(article) {
    const grade = checked(article, "grade");
    const quality = config.quality ? checked(article, "quality") : null;
    if (grade === null || (config.quality && quality === null)) return false;
    const body = {topic: config.topic, item: article.dataset.item, grade: grade};
    if (config.quality) body.quality = quality;
    const response = await fetch(`/api/assess/campaigns/${config.campaign}/judgments`, {
      method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body),
      credentials: "same-origin"});
    if (!response.ok) {
      const detail = (await response.json().catch(() => ({}))).detail || response.statusText;
      message.textContent = `not saved: ${detail}`;
      return false;
    }
    message.textContent = "";
    if (!article.classList.contains("judged")) {
      article.classList.add("judged");
      progress.dataset.judged = String(Number(progress.dataset.judged) + 1);
      progress.textContent = `${progress.dataset.judged} of ${progress.dataset.total} judged`;
    }
    article.querySelector(".status").textContent = "judged";
    return true;
  }

  function choose(article, name, value) {
    const input = article.querySelector(`input[name="${name}"][value="${value}"]`);
    if (!input) return false;
    input.checked = true;
    return true;
  }

  async function saveAndMove(article) {
    if (await save(article)) {
      const next = items.findIndex((a, i) => i > current && !a.classList.contains("judged"));
      if (next >= 0) focusItem(next);
    }
  }

  document.addEventListener("keydown", (event) => {
    if (event.target.tagName === "TEXTAREA" || event.ctrlKey || event.metaKey || event.altKey) return;
    const article = items[current];
    if (event.key === "j") { focusItem(current + 1); event.preventDefault(); return; }
    if (event.key === "k") { focusItem(current - 1); event.preventDefault(); return; }
    const digit = /^Digit(\d)$/.exec(event.code);
    if (!digit || !article) return;
    const name = event.shiftKey ? "quality" : "grade";
    if (name === "quality" && !config.quality) return;
    if (choose(article, name, digit[1])) { event.preventDefault(); saveAndMove(article); }
  });

  items.forEach((article, i) => {
    article.querySelector("form").addEventListener("submit", (event) => {
      event.preventDefault();
      current = i;
      saveAndMove(article);
    });
    article.addEventListener("change", () => { current = i; save(article); });
  });
  if (items.length) focusItem(current);
  document.body.dataset.ready = "1";
})();
