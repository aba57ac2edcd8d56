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

  // A filter that applies as soon as it changes (data-submit-on-change): its form is sent. Pages hold no inline
  // script (the Content-Security-Policy allows none), so behaviours are attributes read here.
  document.addEventListener("change", function (event) {
    var field = event.target.closest("[data-submit-on-change]");
    if (field && field.form) field.form.submit();
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

  // The charts: data-usage-url answers {times, series:[{label, values, scale?}], start, end, unit?, empty?, error?}.
  // The x axis spans exactly the chosen window (start to end, epoch seconds) whatever the samples, none or one
  // included: uPlot's own x range would stretch a single sample over years. A series with scale "GiB" gets its
  // own axis on the right (a series may name its colour); unit "%" fixes the y axis to 0-100. When there is no sample the chart still shows
  // the window and the status line says why (the answer's "empty").
  var COLOURS = ["#5b7fd6", "#6b7585", "#1d232b", "#2e8540", "#b86e00", "#7b4fc9", "#c4302b", "#0f8b8d"];
  var charts = new WeakMap();

  function drawChart(box, range) {
    var base = box.getAttribute("data-usage-url");
    var url = base + (base.indexOf("?") < 0 ? "?" : "&") + "range=" + encodeURIComponent(range);
    var status = box.parentElement.querySelector("[data-chart-status]");
    box.setAttribute("data-range", range);
    box.setAttribute("aria-busy", "true");
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.json(); })
      .then(function (data) {
        var old = charts.get(box);
        if (old) old.destroy();
        box.innerHTML = "";
        box.removeAttribute("aria-busy");
        var empty = !data.times.length;
        var message = data.error ? "Prometheus did not answer: " + data.error : "";
        if (empty) {
          message = data.empty || "No usage samples in this period yet: the worker records one a minute.";
        }
        status.textContent = message;
        status.classList.toggle("error", Boolean(data.error));
        if (typeof uPlot === "undefined") return;
        var percent = data.unit === "%";
        var label = box.getAttribute("data-y-label") || data.unit || "GPUs";
        var right = false;
        var series = [{ label: "Time" }];
        data.series.forEach(function (item, index) {
          if (item.scale) right = item.scale;
          series.push({
            label: item.label,
            scale: item.scale || "y",
            stroke: item.color || COLOURS[index % COLOURS.length],
            width: index === 0 ? 2 : 1.5,
            dash: item.label === "Quota" || item.label === "Deserved" ? [6, 4] : undefined,
            spanGaps: false,
            points: { show: data.times.length < 3 ? true : undefined, size: 6 },
            value: function (u, v) { return v == null ? "—" : Math.round(v * 10) / 10; },
          });
        });
        var start = data.start, end = data.end;
        var scales = {
          x: {
            time: true,
            auto: false,
            range: function (u, min, max) { return start ? [start, end] : [min, max]; },
          },
          y: {
            auto: !percent,
            range: percent
              ? [0, 100]
              : function (u, min, max) { return [0, Math.max(1, (max || 0) * 1.1)]; },
          },
        };
        var axes = [{}, { label: label, scale: "y" }];
        if (right) {
          scales[right] = { range: function (u, min, max) { return [0, Math.max(1, (max || 0) * 1.1)]; } };
          axes.push({ label: right, scale: right, side: 1, grid: { show: false } });
        }
        var width = Math.max(320, box.clientWidth);
        var chart = new uPlot(
          { width: width, height: 260, series: series, scales: scales, axes: axes },
          [data.times].concat(data.series.map(function (item) { return item.values; })),
          box
        );
        if (start) chart.setScale("x", { min: start, max: end });
        charts.set(box, chart);
        box.uplot = chart; // for the browser tests: the scales the chart drew
        box.classList.toggle("empty-chart", empty);
        box.setAttribute("data-start", start || "");
        box.setAttribute("data-end", end || "");
        box.setAttribute("data-points", String(data.times.length));
      })
      .catch(function () {
        box.removeAttribute("aria-busy");
        status.textContent = "The chart's data could not be loaded.";
      });
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
