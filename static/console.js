// Small behaviours of the console pages: copy buttons, YAML/JSON switches and the usage chart.
// Everything else is server-rendered HTML with htmx attributes.
(function () {
  "use strict";

  function onClick(selector, handler) {
    document.addEventListener("click", function (event) {
      var target = event.target.closest(selector);
      if (target) handler(target, event);
    });
  }

  // Copy the text of the element named by data-copy (an id) and say so on the button.
  onClick("[data-copy]", function (button) {
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.textContent;
    var done = function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done);
    } else {
      var area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
      done();
    }
  });

  // Switch between two renderings of one document (YAML / JSON): data-show names the one to show.
  onClick("[data-show]", function (button) {
    var group = button.closest("[data-formats]");
    group.querySelectorAll("[data-show]").forEach(function (other) {
      var shown = other === button;
      other.setAttribute("aria-pressed", shown ? "true" : "false");
      var panel = document.getElementById(other.getAttribute("data-show"));
      if (panel) panel.hidden = !shown;
    });
    var copy = group.querySelector("[data-copy]");
    if (copy) copy.setAttribute("data-copy", button.getAttribute("data-show"));
  });

  // The usage chart: data-usage-url answers {times, series:[{label, values}], start, end}; the x axis spans the
  // chosen period (start to end) whatever the samples, and the range buttons reload it.
  var COLOURS = ["#5b7fd6", "#9aa4b2", "#1d232b", "#2e8540", "#b86e00", "#7b4fc9", "#c4302b", "#0f8b8d"];

  function drawChart(box, range) {
    var url = box.getAttribute("data-usage-url") + "?range=" + encodeURIComponent(range);
    var status = box.parentElement.querySelector("[data-chart-status]");
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (data) {
        box.innerHTML = "";
        box.classList.toggle("empty-chart", !data.times.length);
        if (!data.times.length) {
          status.textContent = "No usage samples in this period yet: the worker records one a minute.";
          return;
        }
        status.textContent = "";
        if (typeof uPlot === "undefined") return;
        var series = [{}];
        data.series.forEach(function (item, index) {
          series.push({
            label: item.label,
            stroke: COLOURS[index % COLOURS.length],
            width: index === 0 ? 2 : 1.5,
            dash: item.label === "Quota" || item.label === "Deserved" ? [6, 4] : undefined,
            spanGaps: true,
            value: function (u, v) { return v == null ? "—" : Math.round(v * 10) / 10; },
          });
        });
        var width = Math.max(320, box.clientWidth);
        new uPlot(
          { width: width, height: 260, series: series,
            scales: {
              x: { time: true, range: function (u, min, max) { return data.start ? [data.start, data.end] : [min, max]; } },
              y: { range: function (u, min, max) { return [0, Math.max(1, max * 1.1)]; } },
            },
            axes: [{}, { label: "GPUs" }] },
          [data.times].concat(data.series.map(function (item) { return item.values; })),
          box
        );
      })
      .catch(function () { status.textContent = "The usage history could not be loaded."; });
  }

  function initCharts(root) {
    root.querySelectorAll("[data-usage-url]").forEach(function (box) {
      drawChart(box, box.getAttribute("data-range") || "24h");
    });
  }

  onClick("[data-range-button]", function (button) {
    var group = button.closest("[data-chart]");
    group.querySelectorAll("[data-range-button]").forEach(function (other) {
      other.setAttribute("aria-pressed", other === button ? "true" : "false");
    });
    drawChart(group.querySelector("[data-usage-url]"), button.getAttribute("data-range-button"));
  });

  document.addEventListener("DOMContentLoaded", function () { initCharts(document); });
})();
