-- figures: the one row of figures `devportal report` formats (text, JSON, CSV, Markdown, HTML),
-- one column per figure key. The figures are computed by the model
-- sql/marts/report_figures.sql; the report only reads its row.
select * from analytics.report_figures
