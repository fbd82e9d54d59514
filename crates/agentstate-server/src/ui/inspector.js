// The inspector's behaviour: keyboard and slider navigation through the timeline (the state
// panel follows), live events, and confirmation before any change. Pages work without it.
"use strict";
(() => {
  document.addEventListener("submit", (e) => {
    const message = e.target.dataset.confirm;
    if (message && !window.confirm(message)) e.preventDefault();
  });
  const session = document.querySelector(".session");
  if (!session) return;
  const base = session.dataset.base;
  const list = session.querySelector("ol.events");
  const scrub = session.querySelector(".scrub");
  const rows = () => Array.from(list.querySelectorAll("li.event"));

  async function select(row, scroll) {
    if (!row) return;
    rows().forEach((r) => r.classList.toggle("selected", r === row));
    if (scroll) row.scrollIntoView({ block: "nearest" });
    if (scrub) scrub.value = rows().indexOf(row);
    const id = row.dataset.id;
    history.replaceState(null, "", "?at=" + encodeURIComponent(id) + pageParam());
    const response = await fetch(base + "/state?at=" + encodeURIComponent(id), { credentials: "same-origin" });
    if (!response.ok) return;
    const panel = document.getElementById("state");
    const next = document.createElement("div");
    next.innerHTML = await response.text();
    if (panel && next.firstElementChild) panel.replaceWith(next.firstElementChild);
  }
  function pageParam() {
    const page = new URLSearchParams(location.search).get("page");
    return page ? "&page=" + encodeURIComponent(page) : "";
  }
  list.addEventListener("click", (e) => {
    const link = e.target.closest("a.select");
    if (!link || e.metaKey || e.ctrlKey) return;
    e.preventDefault();
    select(link.closest("li.event"), false);
  });
  document.addEventListener("keydown", (e) => {
    if (e.target.closest("input, textarea") && e.target !== scrub) return;
    const all = rows();
    const at = all.findIndex((r) => r.classList.contains("selected"));
    let next = null;
    if (e.key === "ArrowDown" || e.key === "j") next = all[Math.min(all.length - 1, at + 1)];
    if (e.key === "ArrowUp" || e.key === "k") next = all[Math.max(0, at - 1)];
    if (e.key === "Home") next = all[0];
    if (e.key === "End") next = all[all.length - 1];
    if (next) { e.preventDefault(); select(next, true); }
  });
  if (scrub) scrub.addEventListener("input", () => select(rows()[Number(scrub.value)], true));

  // Live: on the newest page, ask for events appended since the last one shown.
  if (!session.dataset.live) return;
  let after = session.dataset.after || "";
  async function poll() {
    try {
      const response = await fetch(base + "/live?after=" + encodeURIComponent(after), { credentials: "same-origin" });
      if (response.ok) {
        const update = await response.json();
        if (update.html) {
          const holder = document.createElement("ol");
          holder.innerHTML = update.html;
          const atEnd = rows().at(-1)?.classList.contains("selected");
          for (const row of Array.from(holder.children)) {
            if (document.getElementById(row.id)) continue;
            row.classList.add("fresh");
            list.appendChild(row);
          }
          if (scrub) scrub.max = Math.max(0, rows().length - 1);
          const count = session.querySelector(".count");
          if (count) count.textContent = update.count + " events";
          session.querySelector(".timeline .empty")?.remove();
          if (atEnd) select(rows().at(-1), true);
        }
        if (update.after) after = update.after;
      }
    } finally {
      setTimeout(poll, 1500);
    }
  }
  setTimeout(poll, 1500);
})();
